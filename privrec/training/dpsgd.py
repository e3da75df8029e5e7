"""DP-SGD (Abadi et al., CCS'16) as a private baseline, through Opacus: per-sample gradients clipped to
``max_grad_norm``, Gaussian noise of std ``noise_multiplier x max_grad_norm`` added to their sum, on
Poisson-sampled batches (each training sample joins a step with probability q), and accounted with
dp-accounting's RDP accountant for ``steps`` Poisson-subsampled Gaussians.

**Unit of privacy**, two settings:

* ``"sample"`` (default): one training sample (for sequential models one prefix with its next item),
  under add/remove. That is *not* DIPSGNN's edge level (one transition count of a user's graph) nor a
  user: a transition lies in up to max_len - 1 prefixes and a user owns all of theirs, so user-level
  protection is group privacy over every sample of the user (much weaker). The guarantee says so.
* ``"user"``: one user, any change to their history (replace-one). Each *user* joins a step with
  probability q (:class:`UserPoissonTask`), the batch holds all their training samples, and the optimizer
  sums each user's per-sample gradients before clipping the sum to ``max_grad_norm`` (user-level DP-SGD,
  McMahan et al., ICLR'18), so one user moves the noisy sum by at most C. The weights are then DP for
  every change inside one user's history — a transition count, an interaction, a label, the node set —
  which is what lets them compose with DIPSGNN's edge-level aggregates in one ledger
  (:func:`privrec.privacy.ledger.compose_model`). Accounted by dp-accounting's PLD accountant under
  REPLACE_ONE (the RDP accountant does not support it), with add/remove-one-user as the related guarantee.

Reproducibility and resumption: the Poisson draws follow the trainer's seeded batch generator and the
noise a generator seeded by ``seed`` on the model's device (CPU or CUDA). The noise generator's state
travels in the optimizer's ``state_dict``, so a resumed run draws exactly the noise it would have drawn.
**No noise is ever drawn twice**: the analysis composes *independent* Gaussians, and a resumed run that
re-seeded with ``seed`` would repeat epoch 1's noise vectors (two updates with the same noise subtract to
a noise-free gradient sum). Where the saved state cannot be restored (a state saved before it was kept,
or on another device type), the generator is re-seeded from ``(seed, optimizer steps taken)``, a stream
of its own, and the run's noise is fresh rather than replayed.

Wiring: :func:`make_private` attaches Opacus' per-sample-gradient hooks to the model and wraps the
optimizer in Opacus' ``DPOptimizer``; :class:`PoissonTask` draws the batches. Both plug into the
one trainer (``Trainer(make_optimizer=...)`` and the task), nothing else changes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from privrec.errors import ParameterError
from privrec.privacy.guarantee import Guarantee
from privrec.privacy.validate import check_delta, check_epsilon

UNIT = "one training sample (a prefix and its next item); user level is group privacy over all of a user's samples"
UNIT_USER = "one user (any change to their history: every training sample, transition and label of theirs)"
UNITS = ("sample", "user")
# the fewest expected users per user-level step, whatever the budget (min_expected_users raises it per run)
MIN_EXPECTED_USERS = 16


@dataclass(frozen=True)
class DPSGDConfig:
    """``noise_multiplier`` z (noise std / max_grad_norm), or None to calibrate it to ``epsilon``
    over the run's planned steps; ``delta`` of the guarantee."""

    max_grad_norm: float = 1.0
    noise_multiplier: float | None = None
    epsilon: float | None = None
    delta: float = 1e-6

    def __post_init__(self) -> None:
        if not (math.isfinite(self.max_grad_norm) and self.max_grad_norm > 0):
            raise ParameterError(f"max_grad_norm (per-sample clipping norm) must be positive, got {self.max_grad_norm}")
        if (self.noise_multiplier is None) == (self.epsilon is None):
            raise ParameterError("give exactly one of noise_multiplier and epsilon (the target to calibrate to)")
        if self.noise_multiplier is not None and not (math.isfinite(self.noise_multiplier)
                                                      and self.noise_multiplier > 0):
            raise ParameterError(f"noise_multiplier must be positive, got {self.noise_multiplier}")
        if self.epsilon is not None:
            check_epsilon(self.epsilon)
        check_delta(self.delta)


def dpsgd_event(noise_multiplier: float, sample_rate: float, steps: int):
    """``steps`` Poisson-subsampled Gaussians (dp-accounting event)."""
    import dp_accounting

    if not 0 < sample_rate <= 1:
        raise ParameterError(f"sample rate must lie in (0, 1], got {sample_rate}")
    one = dp_accounting.PoissonSampledDpEvent(sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier))
    return dp_accounting.SelfComposedDpEvent(one, int(steps))


def dpsgd_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                  unit: str = "sample") -> float:
    """Epsilon of the run: unit "sample", add/remove one sample, RDP (the accountant Opacus uses by default;
    PLD over ~10^5 subsampled steps costs minutes); unit "user", replace one user, PLD (dp-accounting's RDP
    accountant has no Poisson sampling under REPLACE_ONE)."""
    import dp_accounting
    from dp_accounting import rdp
    from dp_accounting.pld import pld_privacy_accountant

    _check_unit(unit)
    if unit == "sample":
        acc = rdp.RdpAccountant()
    else:
        acc = pld_privacy_accountant.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpsgd_event(noise_multiplier, sample_rate, steps))
    return float(acc.get_epsilon(check_delta(delta)))


def _check_unit(unit: str) -> str:
    if unit not in UNITS:
        raise ParameterError(f"DP-SGD's unit must be one of {list(UNITS)}, got {unit!r}")
    return unit


def calibrate_noise(epsilon: float, delta: float, sample_rate: float, steps: int, unit: str = "sample") -> float:
    """Smallest noise multiplier whose run meets (epsilon, delta) for ``unit`` (bisection, 1e-4 relative
    under RDP; 1e-3 under PLD, whose every evaluation costs ~0.1-1 s)."""
    check_epsilon(epsilon)
    tol = 1e-4 if _check_unit(unit) == "sample" else 1e-3
    lo, hi = 1e-2, 1.0
    while dpsgd_epsilon(hi, sample_rate, steps, delta, unit) > epsilon:
        lo, hi = hi, hi * 2
        if hi > 1e4:
            raise ParameterError(f"no noise multiplier up to 1e4 meets epsilon = {epsilon} over {steps} steps")
    while hi - lo > tol * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if dpsgd_epsilon(mid, sample_rate, steps, delta, unit) <= epsilon else (mid, hi)
    return hi


def guarantee(noise_multiplier: float, sample_rate: float, steps: int, delta: float, max_grad_norm: float,
              counted: bool = False, unit: str = "sample", n_units: int | None = None) -> Guarantee:
    """The trained weights' guarantee over ``steps`` noisy steps (``counted``: by the optimizer as it drew the
    noise, :func:`make_private`; else planned, epochs x steps per epoch, which can only over-count). Unit
    "user": replace one user (PLD), with add/remove one user as the related guarantee; with ``n_units`` (the
    users sampled from) the chance that some step drew nobody and was skipped, which the accountant's mechanism
    would have taken as a noise-only step, is added to delta: (1 + e^eps) x steps x (1 - q)^(n_units - 1)."""
    notes = ("Epochs are selected on validation items, which this accounting does not cover.",
             "steps: counted by the optimizer as each step drew its noise (the ledger)" if counted else
             "steps: planned (epochs run x steps per epoch; a state from before the count)")
    params = {"noise_multiplier": noise_multiplier, "sample_rate": sample_rate, "steps": int(steps),
              "max_grad_norm": max_grad_norm, "unit": _check_unit(unit)}
    event = dpsgd_event(noise_multiplier, sample_rate, steps)
    if unit == "sample":
        return Guarantee(
            mechanism="dp-sgd", definition="(epsilon, delta)-DP of the trained weights (Poisson-sampled DP-SGD)",
            epsilon=dpsgd_epsilon(noise_multiplier, sample_rate, steps, delta), delta=delta, unit=UNIT,
            parameters=params, accounting="RDP (dp-accounting)", event=event, relation="add_or_remove_one",
            notes=notes)
    skip = 0.0 if n_units is None else int(steps) * (1 - sample_rate) ** max(int(n_units) - 1, 0)
    if n_units is not None:
        params["users"] = int(n_units)
        notes += (f"An empty Poisson draw is skipped, not taken as a noise-only step: delta includes (1 + e^eps) x "
                  f"{skip:.3g}, the chance that any of the {int(steps)} steps drew nobody.",
                  "The sampling rate comes from the data's training-sample count, and the epoch selection and "
                  "logged losses from raw data: hyperparameters and diagnostics outside this accounting.")
    eps_ar = dpsgd_epsilon(noise_multiplier, sample_rate, steps, delta)
    add_remove = Guarantee(
        mechanism="dp-sgd-user", definition="(epsilon, delta)-DP of the trained weights (user-level DP-SGD)",
        epsilon=eps_ar, delta=delta + (1 + math.exp(eps_ar)) * skip,
        unit="one user added or removed (all their training samples)", parameters=params,
        accounting="RDP (dp-accounting)", event=event, relation="add_or_remove_one", notes=notes)
    eps = dpsgd_epsilon(noise_multiplier, sample_rate, steps, delta, "user")
    return Guarantee(
        mechanism="dp-sgd-user", definition="(epsilon, delta)-DP of the trained weights (user-level DP-SGD: each "
                                            "Poisson-sampled user's summed gradient clipped to C, Gaussian noise)",
        epsilon=eps, delta=delta + (1 + math.exp(eps)) * skip, unit=UNIT_USER,
        parameters=params, accounting="PLD (dp-accounting), replace-one", event=event, relation="replace_one",
        related=(add_remove,), notes=notes)


class PoissonTask:
    """A training task whose batches are Poisson samples: each of the task's ``n`` training samples
    joins a step independently with probability ``sample_rate``; ``ceil(1 / sample_rate)`` steps
    make an epoch (an empty draw is skipped: probability exp(-q n), ~0 at q n in the hundreds).
    Everything else (evaluation) is the wrapped task's."""

    def __init__(self, task, sample_rate: float):
        if not 0 < sample_rate <= 1:
            raise ParameterError(f"sample rate must lie in (0, 1], got {sample_rate}")
        self.task, self.sample_rate = task, float(sample_rate)
        self.n = task.n_train_samples

    def __getattr__(self, name):
        return getattr(self.task, name)

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(1 / self.sample_rate)

    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]:
        for _ in range(self.steps_per_epoch):
            idx = np.flatnonzero(rng.random(self.n) < self.sample_rate)
            if len(idx):
                yield self.task.train_batch(idx)

    def n_train_batches(self, batch_size: int) -> int:
        return self.steps_per_epoch


class UserPoissonTask(PoissonTask):
    """User-level Poisson batches: each of the task's users with training samples joins a step independently
    with probability ``sample_rate``, bringing all their training samples; ``ceil(1 / sample_rate)`` steps
    make an epoch. :attr:`groups` is the current batch's per-sample user position (0 .. users in the batch - 1),
    read by the optimizer (:func:`make_private` with ``groups``) to sum each user's gradients before clipping.
    The task must say whose each training sample is (``train_sample_users``). An empty draw is skipped, so q x
    users must be at least ``min_users`` (:func:`min_expected_users` for a run's budget; at least
    :data:`MIN_EXPECTED_USERS`)."""

    def __init__(self, task, sample_rate: float, min_users: float = MIN_EXPECTED_USERS):
        super().__init__(task, sample_rate)
        owners = getattr(task, "train_sample_users", None)
        if owners is None:
            raise ParameterError(f"user-level DP-SGD needs to know whose each training sample is; "
                                 f"{type(task).__name__} does not say (use --dpsgd-unit sample)")
        owners = np.asarray(owners)
        users, inverse = np.unique(owners, return_inverse=True)
        self.order = np.argsort(inverse, kind="stable")                     # samples grouped by user
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=len(users)))])
        self.n, self.n_samples = len(users), len(owners)
        if self.n < MIN_EXPECTED_USERS:
            raise ParameterError(f"user-level DP-SGD samples users, and this data has {self.n} with training samples; "
                                 f"it needs at least {MIN_EXPECTED_USERS} (use --dpsgd-unit sample)")
        need = max(float(min_users), MIN_EXPECTED_USERS)
        if self.sample_rate * self.n < need:
            raise ParameterError(
                f"user-level DP-SGD expects {self.sample_rate * self.n:.3g} users per step (sample rate "
                f"{self.sample_rate:.3g} x {self.n} users) and needs at least {need:.1f}, so that an empty, skipped "
                f"step stays negligible against delta: raise --batch-size (expected training samples per step, "
                f"now {self.sample_rate * self.n_samples:.0f}) to at least {math.ceil(need * self.n_samples / self.n)}")
        self.groups: torch.Tensor | None = None

    def train_batches(self, batch_size: int, rng: np.random.Generator) -> Iterator[dict[str, torch.Tensor]]:
        for _ in range(self.steps_per_epoch):
            chosen = np.flatnonzero(rng.random(self.n) < self.sample_rate)
            if not len(chosen):
                continue
            starts, sizes = self.indptr[chosen], self.indptr[chosen + 1] - self.indptr[chosen]
            group = np.repeat(np.arange(len(chosen)), sizes)          # each sample's user position in the batch
            offset = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            idx = self.order[starts[group] + offset]                   # every sample of every chosen user
            self.groups = torch.from_numpy(group)
            yield self.task.train_batch(idx)


def min_expected_users(epsilon: float, delta: float, steps: int) -> float:
    """Expected users per step below which a skipped empty draw could cost more than 1% of ``delta``: the
    guarantee adds (1 + e^eps) x steps x (1 - q)^(n - 1) <= (1 + e^eps) x steps x e^(-q (n - 1)) to delta
    (:func:`guarantee`), so q n >= 1 + ln(100 x steps x (1 + e^eps) / delta)."""
    return 1 + math.log(100 * max(int(steps), 1) * (1 + math.exp(epsilon)) / delta)


def _resume_seed(seed: int, optimizer_state: dict) -> int:
    """A seed of its own for a resumed run whose noise state is lost: (seed, steps taken so far)."""
    steps = [int(v["step"]) for v in optimizer_state.get("state", {}).values() if "step" in v]
    return int(np.random.SeedSequence([seed, max(steps, default=0), 0x5EED]).generate_state(1, np.uint64)[0] >> 1)


def make_private(model: torch.nn.Module, optimizer: torch.optim.Optimizer, noise_multiplier: float,
                 max_grad_norm: float, expected_batch_size: float, seed: int = 0, groups=None):
    """Opacus' per-sample-gradient hooks on ``model`` and its ``DPOptimizer`` around ``optimizer``
    (clip each sample's gradient to ``max_grad_norm``, add N(0, (z C)^2), divide by the expected
    batch size). The model's loss must be a mean over samples with the batch as the leading axis.
    ``groups`` (user level, :class:`UserPoissonTask`): a callable giving the current batch's per-sample group
    ids; each group's per-sample gradients are summed before clipping, and ``expected_batch_size`` is then
    the expected number of groups (users) per step.
    The noise generator lives on the model's device and its state is part of the optimizer's
    ``state_dict`` (see the module docstring: a resumed run never repeats noise)."""
    import warnings

    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    # Opacus' full backward hooks make torch warn on every model whose first layer takes integer ids (no input
    # requires a gradient): benign — per-sample gradients are taken w.r.t. the weights — and it broke into the
    # progress bars. Only that message is silenced.
    warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are computed with "
                            "respect to module outputs", category=UserWarning)

    class _DPOptimizer(DPOptimizer):
        # the privacy ledger of DP-SGD: noisy steps counted as the noise is drawn (a resumed run keeps its
        # count; a state saved before the count existed leaves it unknown, None, and the plan is certified)
        noise_draws: int | None = 0

        def clip_and_accumulate(self):
            if groups is not None:                   # user level: one row per user, the sum of their samples'
                ids = groups()
                n = int(ids.max()) + 1 if len(ids) else 0
                for p in self.params:
                    gs = self._get_flat_grad_sample(p)
                    if len(gs) != len(ids):
                        raise RuntimeError(f"user-level DP-SGD: {len(gs)} per-sample gradients but {len(ids)} user "
                                           "ids; every step must train on the batch UserPoissonTask yielded last")
                    p.grad_sample = torch.zeros((n, *gs.shape[1:]), dtype=gs.dtype,
                                                device=gs.device).index_add_(0, ids.to(gs.device), gs)
            super().clip_and_accumulate()

        def add_noise(self):
            super().add_noise()
            if self.noise_draws is not None:
                self.noise_draws += 1

        def state_dict(self):
            return {**super().state_dict(), "noise_generator": self.generator.get_state(),
                    "noise_device": self.generator.device.type, "noise_draws": self.noise_draws,
                    "noise_multiplier": self.noise_multiplier}

        def load_state_dict(self, state_dict) -> None:
            state_dict = dict(state_dict)
            saved, where = state_dict.pop("noise_generator", None), state_dict.pop("noise_device", None)
            z = state_dict.pop("noise_multiplier", None)
            if z is not None and not math.isclose(z, self.noise_multiplier, rel_tol=1e-9):
                # its steps drew noise at z; certifying them at this run's multiplier would misstate epsilon
                from privrec.errors import CheckpointError

                raise CheckpointError(f"this training state's DP-SGD steps drew noise at multiplier {z:.6g}, this run "
                                      f"calibrated {self.noise_multiplier:.6g} (another --epochs or budget): resume "
                                      "with the settings it was started with, or start over (--no-resume)")
            self.noise_draws = state_dict.pop("noise_draws", None)
            super().load_state_dict(state_dict)
            if saved is not None and where == self.generator.device.type:
                self.generator.set_state(saved)
            else:                                   # never replay epoch 1's noise: a stream of its own
                self.generator.manual_seed(_resume_seed(seed, state_dict))

    device = next(model.parameters()).device
    hooks = GradSampleModule(model, loss_reduction="mean")
    dp = _DPOptimizer(optimizer, noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm,
                      expected_batch_size=expected_batch_size, loss_reduction="mean",
                      generator=torch.Generator(device=device).manual_seed(seed))
    dp.grad_sample_module = hooks            # keep the hooks' owner alive with the optimizer
    return dp
