"""Pinned closed-form oracles for the accounting, round trips, edge cases, and the audit."""

import math

import numpy as np
import pytest

from privrec.privacy import accounting, audit, sdp
from privrec.privacy.guarantee import Guarantee
from privrec.privacy.ledger import Ledger
from privrec.release.certificate import certificate
from privrec.utils.repro import resolve_seed


def test_t_gaussians_equal_one_gaussian_at_z_over_sqrt_t():
    t, z = 16, 4.0
    many, _ = accounting.epsilon(accounting.gaussian_event(z, t), 1e-5)
    one, _ = accounting.epsilon(accounting.gaussian_event(z / math.sqrt(t)), 1e-5)
    assert many == pytest.approx(one, rel=1e-3)


def test_randomised_response_k2_p_half_is_ln3():
    import dp_accounting

    eps, how = accounting.epsilon(dp_accounting.RandomizedResponseDpEvent(0.5, 2), 0.0, "replace_one")
    assert eps == pytest.approx(math.log(3), abs=2e-3) and "PLD" in how


def test_self_composed_randomised_response_counts_every_release():
    """dp-accounting 0.6's PLD drops the count of SelfComposed(RR); we expand it. Basic
    composition of pure DP is an upper bound and k releases must cost more than one."""
    import dp_accounting

    one = accounting.pure_dp_event(1.0)
    three, _ = accounting.epsilon(dp_accounting.SelfComposedDpEvent(one, 3), 0.0, "replace_one")
    explicit, _ = accounting.epsilon(dp_accounting.ComposedDpEvent([one] * 3), 0.0, "replace_one")
    assert three == pytest.approx(3.0, abs=5e-3) and explicit == pytest.approx(three, abs=1e-6)
    big, how = accounting.epsilon(dp_accounting.SelfComposedDpEvent(one, 10_000), 1e-6, "replace_one")
    assert 1.0 < big <= 10_000.0 and "RDP" in how


def test_pure_dp_event_round_trip():
    for e in (0.1, 1.0, 5.0):
        got, _ = accounting.epsilon(accounting.pure_dp_event(e), 0.0, "replace_one")
        assert got == pytest.approx(e, abs=2e-3)


def test_delta_epsilon_round_trip_and_zero_noise():
    ev = accounting.gaussian_event(1.3, 5)
    eps, _ = accounting.epsilon(ev, 1e-6)
    assert accounting.delta(ev, eps) == pytest.approx(1e-6, rel=0.05)
    assert accounting.epsilon(accounting.gaussian_event(0.0), 1e-5)[0] == math.inf


def test_calibration_meets_target():
    z = accounting.calibrate_gaussian(2.0, 1e-5, count=10)
    eps, _ = accounting.epsilon(accounting.gaussian_event(z, 10), 1e-5)
    assert 1.9 < eps <= 2.0 + 1e-6


def test_ledger_composes_by_unit():
    led = Ledger()
    g = sdp.guarantee(1.0, 100, 10)
    led.add(g, count=3)
    total = led.total(g.unit, delta=1e-6)
    assert total.epsilon <= 6.0 + 1e-9                       # never worse than basic composition
    assert led.total(g.unit).epsilon == pytest.approx(6.0)   # no delta: basic composition


def test_clopper_pearson_brackets():
    lo, hi = audit.clopper_pearson(50, 100, 0.025)
    assert lo < 0.5 < hi and audit.clopper_pearson(0, 10, 0.05)[0] == 0.0


def test_audit_respects_a_correct_mechanism_and_flags_a_miscalibrated_one():
    rng = np.random.default_rng(0)

    def rr(eps_true):
        keep = math.exp(eps_true) / (1 + math.exp(eps_true))
        return (lambda g, n: (g.random(n) < keep).astype(int).tolist(),
                lambda g, n: (g.random(n) >= keep).astype(int).tolist())

    a, b = rr(1.0)
    ok = audit.audit_discrete("rr", 1.0, a, b, key=lambda x: x, n=40_000, rng=rng)
    assert not ok.violates_claim and 0.8 < ok.lower_bound <= 1.0
    a, b = rr(3.0)                                           # claims 1.0 but runs at 3.0
    bad = audit.audit_discrete("rr-miscalibrated", 1.0, a, b, key=lambda x: x, n=40_000, rng=rng)
    assert bad.violates_claim and bad.lower_bound > 2.5


def test_sdp_audit_stays_below_its_true_epsilon():
    rng = np.random.default_rng(1)
    m, eps = 3, 1.0
    A, B = np.array([[0, 1, 2]]), np.array([[0, 2, 1]])
    sa = lambda g, n: list(map(tuple, sdp.perturb(np.repeat(A, n, 0), m, eps, g).tolist()))
    sb = lambda g, n: list(map(tuple, sdp.perturb(np.repeat(B, n, 0), m, eps, g).tolist()))
    res = audit.audit_discrete("sdp", eps, sa, sb, key=lambda x: x, n=60_000, rng=rng)
    assert res.lower_bound <= 2 * eps                         # the true guarantee
    assert res.lower_bound > eps                              # and the paper's claim is beaten


def test_certificate_has_everything():
    g = sdp.guarantee(2.0, 50, 10)
    cert = certificate(g, resolve_seed(None), kind="sequences", input_desc={"rows": 3})
    assert cert["randomness"]["seed_source"] == "os-csprng" and cert["randomness"]["seed"] is None
    assert cert["limitations"]
    assert cert["guarantee"]["paper_claim"]["epsilon"] == 2.0 and "environment" in cert
    assert isinstance(Guarantee("x", "eps-DP", math.inf).to_dict()["epsilon"], str)


def test_composed_gaussians_exactly_match_pld_and_scale_to_large_epsilon():
    from privrec.privacy import accounting as acc

    for z, count, d in ((1.0, 10, 1e-5), (3.0, 1, 1e-5), (0.8, 12, 1e-6)):      # where PLD is computed (< 64)
        pld_eps, _ = acc.epsilon(acc.gaussian_event(z, count), d)
        assert acc.gaussian_epsilon(z, count, d) == pytest.approx(pld_eps, rel=1e-6)
    # DIPSGNN's default: sigma 0.228, C 0.2 (sensitivity sqrt 2 C), 760 passes, delta 1e-6 -> ~747
    assert acc.gaussian_epsilon(0.228 / (0.2 * math.sqrt(2)), 760, 1e-6) == pytest.approx(746.42, abs=0.01)
    z = acc.calibrate_gaussian_exact(5.0, 1e-6, 101)
    assert acc.gaussian_epsilon(z, 101, 1e-6) <= 5.0 and acc.gaussian_epsilon(z * 0.999, 101, 1e-6) > 5.0
    assert acc.gaussian_epsilon(1.0, 4, 1e-5) == pytest.approx(acc.gaussian_epsilon(0.5, 1, 1e-5))  # sqrt(k)/z
