"""What models read besides the interaction sequences, built before training from the data and the
config: the ε₁-LDP user features (APGNN, DIPSGNN, EdgeRand), EdgeRand's published noisy behaviour
graphs, DIPSGNN's noise σ for a target ε₂ (paper or honest accounting) and its whole-run guarantee,
DPMF's objective noise, DP-SGD's private optimizer (Opacus), and the items' text codes (PFCR's
code-based encoder). Each private one returns its data plus the guarantee it was released under;
:func:`privrec.experiments.sequential.run` calls them.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from privrec.data.interactions import Interactions
from privrec.data.splits import Split
from privrec.errors import ParameterError


def user_features(cfg, inter: Interactions, log):
    """(users + 1, d0) encoded user features for a model that reads them (row 0 padding), through
    epsilon1-LDP when ``cfg.epsilon1`` is set, and that release's guarantee; (None, None) for a model that
    reads none. ``cfg.user_features = False`` (the paper's "-U" ablations): no features (a placeholder
    column; the model then embeds user ids, ``user_ids=True``), nothing released."""
    from privrec.models import MODELS
    from privrec.privacy import features as F
    from privrec.release.publish import perturb_user_features

    if not getattr(MODELS.get(cfg.model), "needs_features", False):
        if cfg.epsilon1 is not None or not cfg.user_features:
            raise ParameterError(f"--epsilon1 and --no-user-features are for the models that read user features "
                                 f"(apgnn, dipsgnn, edgerand), not {cfg.model}")
        return None, None
    if not cfg.user_features:
        if cfg.epsilon1 is not None:
            raise ParameterError("--epsilon1 perturbs the user features, and --no-user-features drops them; give one")
        log(f"{cfg.model} without user features: the user embedding is learned per user id (the paper's '-U')")
        return np.zeros((inter.n_users + 1, 1), dtype=np.float32), None
    if inter.user_features is None:
        raise ParameterError(f"{cfg.model} reads user features, and {cfg.dataset} has none (a .user file with "
                             "age/gender/occupation); use srgnn")
    frame = inter.user_features.reindex(range(1, inter.n_users + 1))
    if cfg.epsilon1 is None:
        frame = F.as_movielens(frame)
        encoded, g = F.encode_features(frame, F.movielens_schema(frame)), None
    else:
        encoded, g, _ = perturb_user_features(frame, cfg.epsilon1, np.random.default_rng([cfg.release_seed, 11]))
        log(f"user features through epsilon1 = {cfg.epsilon1:g} LDP: {g.summary().splitlines()[0]}")
    out = np.zeros((inter.n_users + 1, encoded.shape[1]), dtype=np.float32)
    out[1:] = encoded
    return out, g


def dpsgd_optimizer(cfg, task, log):
    """(task, optimizer factory by seed, noise multiplier): Adam as is, or with ``cfg.dpsgd_epsilon`` DP-SGD
    on Poisson batches of expected size ``batch_size``, noise calibrated over the epoch cap."""
    from privrec.training.trainer import adam

    if cfg.dpsgd_epsilon is None:
        return task, lambda seed: adam, None
    if cfg.train.precision != "fp32":
        raise ParameterError(f"precision {cfg.train.precision} is not supported with DP-SGD (Opacus computes "
                             "per-sample gradients in fp32): train it with --precision fp32")
    from privrec.training import dpsgd

    setting = dpsgd.DPSGDConfig(max_grad_norm=cfg.dpsgd_clip, epsilon=cfg.dpsgd_epsilon, delta=cfg.delta)
    rate = min(1.0, cfg.train.batch_size / task.n_train_samples)      # expected training samples per step
    user = cfg.dpsgd_unit == "user"
    planned = cfg.train.epochs * math.ceil(1 / rate)                 # epochs x steps per epoch
    poisson = (dpsgd.UserPoissonTask(task, rate, dpsgd.min_expected_users(setting.epsilon, setting.delta, planned))
               if user else dpsgd.PoissonTask(task, rate))
    z = dpsgd.calibrate_noise(setting.epsilon, setting.delta, poisson.sample_rate, planned, cfg.dpsgd_unit)
    log(f"DP-SGD ({cfg.dpsgd_unit} level): noise multiplier {z:.4g}, clip {cfg.dpsgd_clip:g}, sample rate "
        f"{poisson.sample_rate:.3g}" + (f" ({poisson.sample_rate * poisson.n:.1f} users per step)" if user else "")
        + f", calibrated to epsilon {setting.epsilon:g} at delta {setting.delta:g} over {cfg.train.epochs} epochs")
    expected = poisson.sample_rate * poisson.n if user else cfg.train.batch_size
    groups = (lambda: poisson.groups) if user else None
    return poisson, lambda seed: (lambda m, c: dpsgd.make_private(m, adam(m, c), z, cfg.dpsgd_clip, expected, seed,
                                                                  groups)), z


def passes(cfg, split: Split, epochs: int, maskings: int = 1) -> int:
    """An upper bound on the noisy aggregations that read one transition in ``epochs`` epochs:
    E (L - 1) + E + 1 + (maskings - 1) ceil(L / 5) with L = min(max_len, longest whole sequence of ``split``)
    and ``maskings`` the test passes (2 where ``privrec train`` also tests under the other history masking).

    Exactly, under the prefixes protocol (each sequence cut to its last max_len items, n of them; the
    first n_tr train, the prefixes with labels among them trained or, 10%, validated each epoch; the
    rest test prefixes, evaluated once; n <= L), the transition at positions (p, p + 1) is read by every prefix
    whose label q has p + 2 <= q <= p + max_len: at most n_tr - 2 train/validation prefixes per epoch
    and n - n_tr test prefixes, E (n_tr - 2) + (n - n_tr) <= 0.8 E L + 0.2 L <= E L + 1 for E >= 1 with
    the protocol's 20% test share. The bound over-counts (ML-1M: 1,001 against at most 800 for E = 10),
    so honest calibration adds a little more noise than the exact count would need. A second test pass
    re-reads the n - n_tr test prefixes. This is the *plan* that calibrates sigma; the certificate counts what
    ran (the model's ledger, per user graph: E (n_tr - 1) + maskings (n - n_tr); ML-1M, E = 1, two maskings:
    119 against this plan's 121)."""
    lengths = split.full_history().lengths       # the prefixes protocol cuts these to their last max_len items
    longest = int(lengths.max()) if len(lengths) else 1
    cut = min(cfg.max_len, longest)
    # each further test pass re-reads the test prefixes (20% of the cut sequence), re-noised
    return epochs * max(cut - 1, 1) + epochs + 1 + (maskings - 1) * -(-cut // 5)


def read_passes(task, epochs: int, maskings: int = 1) -> int:
    """The noisy passes *outside training* that read the most-read user graph: ``epochs`` x that user's validation
    prefixes + ``maskings`` x their test prefixes — exactly what the ledger charges when the weights train under
    user-level DP-SGD (whose guarantee covers the training passes)."""
    valid, test = task.stage_users("valid"), task.stage_users("test")
    n = int(max(valid.max(initial=0), test.max(initial=0))) + 1
    return max(int((epochs * np.bincount(valid, minlength=n) + maskings * np.bincount(test, minlength=n)).max()), 1)


def plan_passes(cfg, split: Split, epochs: int, maskings: int = 1, task=None) -> int:
    """The passes that calibrate sigma: :func:`read_passes` for a model whose weights train under user-level
    DP-SGD (given its prefixes ``task``), else :func:`passes` (training passes included)."""
    if cfg.dpsgd_epsilon is not None and cfg.dpsgd_unit == "user" and task is not None:
        return read_passes(task, epochs, maskings)
    return passes(cfg, split, epochs, maskings)


def graph_guarantee(model, cfg, split: Split, epochs: int, log=None, maskings: int = 1, task=None):
    """DIPSGNN's honest (epsilon, delta) over everything the model released so far, from its privacy ledger
    (:meth:`privrec.models.dipsgnn.DIPSGNN.guarantee`). ``log`` hears when the ledger counted more passes than
    the plan (:func:`plan_passes`) that calibrated sigma: the certified epsilon is then above the epsilon2 asked for."""
    plan = plan_passes(cfg, split, epochs, maskings, task)
    g = model.guarantee(cfg.delta, plan)
    if log is not None and model.noisy_passes() > plan:
        log(f"dipsgnn: the ledger counted {model.noisy_passes()} noisy passes of the most-read user graph, more than "
            f"the {plan} planned when sigma was calibrated: the certified epsilon ({g.epsilon:.4g}) is above epsilon2")
    return g


def dipsgnn_sigma(cfg, split: Split, log, maskings: int = 1, task=None) -> dict:
    """{"sigma": ...} from ``cfg.epsilon2`` under ``cfg.accounting`` (empty when not asked); ``maskings``: the
    run's test passes; ``task``: the prefixes task (:func:`plan_passes`)."""
    if cfg.epsilon2 is None or cfg.model in ("edgerand", "dpmf"):     # their own use of epsilon2
        return {}
    if cfg.model != "dipsgnn":
        raise ParameterError(f"--epsilon2 sets DIPSGNN's aggregation noise, not {cfg.model}'s")
    if "sigma" in cfg.model_config:
        raise ParameterError("give either --epsilon2 (sigma calibrated) or --set sigma=..., not both")
    from privrec.privacy.graph import calibrate_sigma, paper_sigma

    mc = cfg.resolved_model_config()
    clip, steps = float(mc.get("clip", 0.2)), int(mc.get("steps", 1))
    if cfg.accounting == "paper":
        sigma = paper_sigma(cfg.epsilon2, clip, steps, cfg.delta)
    else:
        sigma = calibrate_sigma(cfg.epsilon2, cfg.delta, clip, steps,
                                plan_passes(cfg, split, cfg.train.epochs, maskings, task))
    log(f"dipsgnn: sigma {sigma:.4g} for epsilon2 = {cfg.epsilon2:g} ({cfg.accounting} accounting, C = {clip:g}, "
        f"T = {steps})")
    return {"sigma": sigma}


def edge_rand_graphs(cfg, task, n_users: int, log):
    """EdgeRand's release (:mod:`privrec.models.edgerand`): every user's whole behaviour graph (the
    prefix task's cut sequence, training and test items) with N(0, s²) on its real block, s calibrated to
    (``cfg.epsilon2``, ``cfg.delta``) for one release; (n_users + 1, max_len, max_len) float16 and the
    guarantee. Seeded by ``cfg.release_seed`` (the one release every training seed reads)."""
    from privrec.privacy.graph import edge_rand, session_graphs

    if cfg.epsilon2 is None:
        raise ParameterError("edgerand publishes the behaviour graphs under epsilon2: give --epsilon2 (the paper: 5)")
    seqs = task.sequences
    padded = seqs.to_padded(cfg.max_len)
    if seqs.lengths.max(initial=0) > cfg.max_len:
        raise ParameterError(f"edgerand reads each user's whole sequence as one graph; cut them to max_len "
                             f"{cfg.max_len} first (the prefixes protocol does)")
    srt = np.sort(padded, axis=1)
    if ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] > 0)).any():
        raise ParameterError("edgerand's one-release-per-user reading needs sequences without repeated items (a "
                             "prefix's graph is then a block of the user's); this dataset repeats items")
    out = torch.zeros(n_users + 1, cfg.max_len, cfg.max_len, dtype=torch.float16)
    rng, g = np.random.default_rng([cfg.release_seed, 13]), None
    for start in range(0, len(padded), 1024):            # chunks: the float64 noise of 6k x 100 x 100 is 480 MB
        rows = slice(start, start + 1024)
        graphs = session_graphs(padded[rows], pad_to=cfg.max_len)
        noisy, _, g = edge_rand(graphs.a_out, cfg.epsilon2, cfg.delta, rng, n_nodes=graphs.n_nodes)
        out[rows] = torch.from_numpy(noisy).to(torch.float16)
    log(f"edgerand: every user's behaviour graph published once, noise std {g.parameters['noise_std']:.4g} for "
        f"epsilon2 = {cfg.epsilon2:g} at delta {cfg.delta:g} (the whole run's edge-level epsilon: one release)")
    return out, g


def dpmf_noise(cfg, model, task, log):
    """DPMF's objective noise (:mod:`privrec.privacy.objective`) at ``cfg.epsilon2``, set on ``model``;
    seeded by ``cfg.release_seed``. Returns its guarantee (the paper's claim, no proven ε)."""
    from privrec.privacy.objective import objective_noise

    if cfg.epsilon2 is None:
        raise ParameterError("dpmf perturbs its objective under a budget: give --epsilon2 (the paper: 5)")
    if task is None:
        raise ParameterError("dpmf trains on prefix samples: use --protocol dipsgnn (--split prefixes)")
    n, d = model.eta.shape
    eta, g = objective_noise(n, d, cfg.epsilon2, np.random.default_rng([cfg.release_seed, 19]))
    model.set_noise(torch.from_numpy(eta).float(), task.n_train_samples)
    log(f"dpmf: objective perturbed at epsilon {cfg.epsilon2:g} (Delta = {g.parameters['sensitivity']:g}); "
        f"{g.validity}")
    return g


def item_codes(cfg, inter, model, log) -> dict:
    """The items' product-quantisation codes from their text (title, genres, year through the offline
    MiniLM encoder; :func:`privrec.data.codes.product_codes`, seeded by ``cfg.release_seed``), set on
    ``model``. Returns the codes' description (codebooks, centroids, reconstruction error)."""
    from privrec.data.codes import product_codes
    from privrec.experiments import rr_release

    emb = rr_release.item_embeddings(inter)
    table = model.item_embedding
    codes = product_codes(emb, table.n_codebooks, table.n_centroids, seed=cfg.release_seed)
    model.set_codes(torch.from_numpy(codes.codes))
    log(f"item codes: {inter.n_items:,} item texts -> {codes.n_codebooks} codebooks x {codes.n_centroids} centroids "
        f"(relative reconstruction error {codes.relative_error:.3f})")
    return codes.to_dict()
