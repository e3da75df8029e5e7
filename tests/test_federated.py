"""PFCR's federated round as client and server steps: local training of the shared code table, encoded
uploads, FedAvg on the server, and each client's composed guarantee."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from privrec.errors import ParameterError
from privrec.training.federated import CodecConfig, client_round, server_aggregate, shared_table, upload_guarantee


def _client(seed: int, offset: int):
    from privrec.data.sequences import Sequences
    from privrec.data.splits import leave_one_out
    from privrec.models import build
    from privrec.training.tasks import SequenceTask
    from privrec.training.trainer import TrainConfig, Trainer

    torch.manual_seed(seed)
    model = build("code-sasrec", n_items=10, max_len=5, hidden=8, heads=2, n_codebooks=2, n_centroids=4)
    codes = np.vstack([[-1, -1]] + [[(i + offset) % 4, (2 * i) % 4] for i in range(1, 11)])
    model.set_codes(torch.from_numpy(codes))
    rows = [[]] + [[(u + t) % 10 + 1 for t in range(7)] for u in range(12)]
    task = SequenceTask(leave_one_out(Sequences.from_rows(rows)), n_items=10, max_len=5)
    return model, Trainer(model, task, TrainConfig(epochs=1, batch_size=4, lr=1e-2, progress=False, seed=seed))


def test_plain_round_is_fedavg_of_the_clients_table_changes():
    codec = CodecConfig(mode="none")
    (m1, t1), (m2, t2) = _client(0, 0), _client(1, 1)
    start = shared_table(m1).detach().numpy().astype(np.float64).copy()
    before2 = {k: v.clone() for k, v in m2.state_dict().items() if "table" not in k}
    up1, n1, loss1 = client_round(m1, t1, start, 1, codec, np.random.default_rng(0))
    up2, n2, _ = client_round(m2, t2, start, 1, codec, np.random.default_rng(1))
    assert n1 == n2 > 0 and math.isfinite(loss1) and np.abs(up1).max() > 0
    new = server_aggregate(start, [up1, up2], [n1, 3 * n2], codec)
    np.testing.assert_allclose(new, start + (up1 + 3 * up2) / 4)
    changed = [k for k, v in m2.state_dict().items() if "table" not in k and k in before2
               and v.dtype.is_floating_point and not torch.equal(v, before2[k])]
    assert changed                                                  # the encoder trained too, and stays local


def test_calibrated_uploads_decode_to_the_mean_change_on_average():
    codec = CodecConfig(mode="calibrated", epsilon=40.0, buckets=16, clip=0.5)     # per upload: 2.2 per coordinate
    rng = np.random.default_rng(0)
    delta = rng.uniform(-0.4, 0.4, size=(6, 3))
    from privrec.training.federated import encode

    uploads = [encode(delta, codec, rng) for _ in range(20000)]
    out = server_aggregate(np.zeros((6, 3)), uploads, [1] * len(uploads), codec)
    np.testing.assert_allclose(out, delta, atol=0.05)               # unbiased decoder
    paper = CodecConfig(mode="paper", epsilon=0.5, buckets=16, clip=0.5)
    reports = [encode(delta, paper, rng) for _ in range(50)]
    assert server_aggregate(np.zeros((6, 3)), reports, [1] * 50, paper).shape == (6, 3)


def test_each_clients_guarantee_composes_its_uploads_and_plain_uploads_have_none():
    assert math.isinf(upload_guarantee(CodecConfig(mode="none"), 10, 3).epsilon)
    one = upload_guarantee(CodecConfig(mode="paper", epsilon=0.5, buckets=64), 1, 1)
    assert "in the clear" in one.notes[-1] and "validation" in one.notes[-1]   # what else leaves a client, said
    assert one.epsilon == pytest.approx(math.log(1 + 64 * (math.exp(0.5) + 1)), rel=1e-6)   # the true per-coordinate ε
    ten = upload_guarantee(CodecConfig(mode="calibrated", epsilon=0.5, buckets=64), 100, 10)
    assert ten.epsilon > upload_guarantee(CodecConfig(mode="calibrated", epsilon=0.5, buckets=64), 100, 1).epsilon
    with pytest.raises(ParameterError, match="mode"):
        CodecConfig(mode="secure")
    with pytest.raises(ParameterError, match="epsilon"):
        CodecConfig(epsilon=0.0)
    with pytest.raises(ParameterError, match="one weight per upload"):
        server_aggregate(np.zeros(2), [np.zeros(2)], [1, 2], CodecConfig(mode="none"))
    with pytest.raises(ParameterError, match="code-embedding table"):
        from privrec.models import build

        shared_table(build("sasrec", n_items=5, max_len=4, hidden=8))
