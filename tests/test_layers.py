"""privrec.models.layers: dropout with torch.rand masks has nn.Dropout's distribution; attention
equals torch's without dropout and never reads a hidden key with it."""

import pytest
import torch
import torch.nn.functional as F

from privrec.errors import ParameterError
from privrec.models.layers import Dropout, attention, dropout


def test_dropout_zeroes_with_probability_p_and_scales_the_rest():
    torch.manual_seed(0)
    x = torch.rand(1000, 1000) + 0.5                       # no zeros of its own
    for p in (0.1, 0.2, 0.5, 0.9):
        y = dropout(x, p)
        zero = y == 0
        n = x.numel()
        assert abs(zero.float().mean().item() - p) < 5 * (p * (1 - p) / n) ** 0.5
        torch.testing.assert_close(y[~zero], x[~zero] / (1 - p))


def test_dropout_gradient_is_the_scaled_mask_and_eval_is_identity():
    torch.manual_seed(1)
    x = torch.randn(64, 50, 8, requires_grad=True)
    y = dropout(x, 0.3)
    y.sum().backward()
    torch.testing.assert_close(x.grad, (y != 0).float() / 0.7)
    m = Dropout(0.3).eval()
    assert m(x) is x and dropout(x, 0.0) is x and dropout(x, 0.3, training=False) is x
    assert torch.count_nonzero(dropout(x, 1.0)) == 0
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ParameterError, match="dropout probability"):
            Dropout(bad)


def test_dropout_is_reproducible_from_the_torch_seed():
    x = torch.randn(32, 16)
    torch.manual_seed(7)
    a = Dropout(0.5)(x)
    torch.manual_seed(7)
    assert torch.equal(a, Dropout(0.5)(x))


def _qkv_mask(b=4, h=2, length=6, d=8):
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(b, h, length, d, generator=g) for _ in range(3))
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    pad = torch.ones(b, length, dtype=torch.bool)
    pad[0, :2] = False                                      # user 0: two padding positions in front
    mask = (causal[None, None] & pad[:, None, None, :]) | torch.eye(length, dtype=torch.bool)
    return q, k, v, mask


def test_attention_without_dropout_is_torchs():
    q, k, v, mask = _qkv_mask()
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(attention(q, k, v, mask, 0.3, training=False), want)
    torch.testing.assert_close(attention(q, k, v, mask, 0.0, training=True), want)


def test_attention_dropout_is_unbiased_and_never_reads_hidden_keys():
    q, k, v, mask = _qkv_mask()
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.manual_seed(0)
    mean = torch.stack([attention(q, k, v, mask, 0.2, training=True) for _ in range(4000)]).mean(0)
    assert (mean - want).abs().max() < 0.05                 # E[dropout(w)] = w
    # a hidden key's value never reaches a query: change the future of row 0 and the padding of user 0
    v2 = v.clone()
    v2[:, :, -1] += 100.0
    v2[0, :, :2] += 100.0
    torch.manual_seed(1)
    a = attention(q, k, v, mask, 0.2, training=True)
    torch.manual_seed(1)
    b = attention(q, k, v2, mask, 0.2, training=True)
    torch.testing.assert_close(a[:, :, :-1][1:], b[:, :, :-1][1:])   # users 1..: rows before the last position
    torch.testing.assert_close(a[0, :, 2:-1], b[0, :, 2:-1])         # user 0: its real rows before the last
