"""PFCR's item representation: product-quantisation codes of text embeddings, and the encoder over them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import loss_drop

from privrec.data.codes import _unpack, product_codes
from privrec.errors import ParameterError
from privrec.models import build


def _emb(n=300, dim=48, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((6, dim))
    return centres[rng.integers(0, 6, n)] + 0.05 * rng.standard_normal((n, dim))


def test_codes_are_seeded_shared_by_alike_items_and_better_than_chance():
    emb = _emb()
    a, b = product_codes(emb, n_codebooks=8, n_centroids=16, seed=3), product_codes(emb, 8, 16, seed=3)
    assert np.array_equal(a.codes, b.codes) and a.codes.shape == (301, 8)
    assert (a.codes[0] == -1).all() and a.codes[1:].min() >= 0 and a.codes[1:].max() < 16
    assert a.relative_error < 0.05                                   # six clusters: nearly lossless
    near = np.linalg.norm(emb - emb[0], axis=1) < 1.0
    shared = (a.codes[1:] == a.codes[1]).mean(1)                    # fraction of codes shared with item 1
    assert shared[near].mean() > 0.5 > 0.1 > shared[~near].mean()   # alike texts share codes, others hardly


def test_unpack_reads_faiss_bit_streams():
    codes = np.array([[3, 0, 1, 2], [1, 3, 3, 0]])                   # 2 bits each, little-endian
    packed = np.array([[3 | 0 << 2 | 1 << 4 | 2 << 6], [1 | 3 << 2 | 3 << 4 | 0 << 6]], dtype=np.uint8)
    assert np.array_equal(_unpack(packed, 4, 2), codes)
    small = product_codes(_emb(), n_codebooks=4, n_centroids=4, seed=0)   # 2-bit codes through faiss
    assert small.codes[1:].max() <= 3 and small.relative_error < 1


@pytest.mark.parametrize("kw,word", [(dict(n_codebooks=5), "divide"), (dict(n_centroids=100), "power of two"),
                                     (dict(n_centroids=512), "cannot be clustered")])
def test_bad_settings_are_refused(kw, word):
    with pytest.raises(ParameterError, match=word):
        product_codes(_emb(), **{"n_codebooks": 8, "n_centroids": 16, **kw})
    with pytest.raises(ParameterError, match="NaN"):
        product_codes(np.full((20, 8), np.nan), 2, 4)


def test_an_items_vector_is_the_mean_of_its_code_embeddings_and_the_model_learns():
    torch.manual_seed(0)
    model = build("code-sasrec", n_items=12, max_len=5, hidden=8, heads=2, n_codebooks=3, n_centroids=4)
    codes = np.vstack([[-1, -1, -1]] + [[i % 4, (i // 4) % 4, (i * 3) % 4] for i in range(1, 13)])
    model.set_codes(torch.from_numpy(codes))
    emb = model.item_embedding
    table = emb.table.weight
    want = (table[codes[5, 0]] + table[4 + codes[5, 1]] + table[8 + codes[5, 2]]) / 3
    torch.testing.assert_close(emb(torch.tensor([5]))[0], want)
    assert torch.all(emb.weight[0] == 0)
    many = torch.tensor([[0, 5, 1, 12, 3, 5, 7, 9, 2, 11, 4, 6, 8, 10]])      # >= n_items + 1 ids: pooled once
    torch.testing.assert_close(emb(many)[0], torch.stack([emb(torch.tensor([i]))[0] for i in many[0]]))
    with pytest.raises(ValueError, match="lie in"):
        model.set_codes(torch.full((13, 3), 7))
    seq = torch.tensor([[0, 1, 2, 3, 4], [0, 5, 6, 7, 8]])
    target = torch.tensor([[0, 2, 3, 4, 5], [0, 6, 7, 8, 9]])
    first, last = loss_drop(model, {"seq": seq, "target": target}, 150)
    assert last < 0.5 * first
    scores = model.eval().score({"seq": seq})
    assert scores[:, 0].eq(-torch.inf).all()


def test_sequential_run_sets_codes_from_item_text(monkeypatch):
    from conftest import make_frame

    from privrec.data.interactions import Interactions
    from privrec.data.sequences import to_sequences
    from privrec.data.splits import leave_one_out
    from privrec.experiments import rr_release
    from privrec.experiments.sequential import SequentialConfig, run
    from privrec.training.trainer import TrainConfig

    inter = Interactions.from_frame(make_frame(n_users=20, n_items=40, per_user=8))
    monkeypatch.setattr(rr_release, "item_embeddings", lambda inter: _emb(inter.n_items, 16))   # MiniLM stand-in
    cfg = SequentialConfig(dataset="tiny", model="code-sasrec", max_len=6,
                           model_config={"hidden": 8, "heads": 2, "n_codebooks": 4, "n_centroids": 8},
                           train=TrainConfig(epochs=1, batch_size=16, progress=False))
    res = run(cfg, log=lambda m: None, data=(inter, leave_one_out(to_sequences(inter))))
    assert res["item_codes"]["n_codebooks"] == 4 and res["item_codes"]["relative_error"] < 0.2


def _pretrained():
    torch.manual_seed(0)
    kw = dict(n_items=12, max_len=5, hidden=8, heads=2, n_codebooks=3, n_centroids=4)
    base = build("code-sasrec", **kw)
    codes = np.vstack([[-1, -1, -1]] + [[i % 4, (i // 4) % 4, (i * 3) % 4] for i in range(1, 13)])
    base.set_codes(torch.from_numpy(codes))
    batch = {"seq": torch.tensor([[0, 1, 2, 3, 4], [0, 5, 6, 7, 8]]), "target": torch.tensor([[0, 2, 3, 4, 5],
                                                                                          [0, 6, 7, 8, 9]])}
    loss_drop(base, batch, 20)
    return base, kw, batch


def test_light_prompting_tunes_the_domain_prompt_only_and_full_tunes_everything():
    base, kw, batch = _pretrained()
    light = build("pfcr-prompt", **kw, strategy="light", context_words=6)
    light.load_pretrained(base.state_dict())
    assert torch.equal(light.item_embedding.codes, base.item_embedding.codes)
    trainable = {n for n, p in light.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith("domain_") for n in trainable)
    frozen = {n: p.detach().clone() for n, p in light.named_parameters() if not p.requires_grad}
    loss_drop(light, batch, 5)
    assert all(torch.equal(p, frozen[n]) for n, p in light.named_parameters() if n in frozen)
    full = build("pfcr-prompt", **kw, strategy="full", context_words=6)
    full.load_pretrained(base.state_dict())
    assert all(p.requires_grad for p in full.parameters())
    first, last = loss_drop(full, batch, 100)
    assert last < 0.5 * first
    with pytest.raises(ValueError, match="lacks"):
        full.load_pretrained({"domain_words": full.domain_words.detach()})
    with pytest.raises(ParameterError, match="strategy"):
        build("pfcr-prompt", **kw, strategy="medium")


def test_the_domain_prompt_is_multi_head_attention_over_the_context_words():
    """Eqs. 20–21 computed with keys and values projected once for the batch: the same output and
    gradients as ``nn.MultiheadAttention`` over the context words expanded to every sequence."""
    base, kw, batch = _pretrained()
    model = build("pfcr-prompt", **kw, strategy="full", context_words=6)
    model.load_pretrained(base.state_dict())
    h = torch.randn(3, 5, kw["hidden"], requires_grad=True)
    words = model.domain_words.unsqueeze(0).expand(3, -1, -1)
    want, _ = model.domain_attention(h, words, words, need_weights=False)
    got = model._domain_prompt(h)
    torch.testing.assert_close(got, want)
    g_want = torch.autograd.grad(want.square().sum(), [h, model.domain_words, model.domain_attention.in_proj_weight])
    g_got = torch.autograd.grad(got.square().sum(), [h, model.domain_words, model.domain_attention.in_proj_weight])
    for a, b in zip(g_got, g_want):
        torch.testing.assert_close(a, b)
