"""``privrec train``, ``privrec evaluate`` and ``privrec recommend``."""

from __future__ import annotations

from pathlib import Path

import click

from privrec.cli.config import config_option
from privrec.cli.fields import field_options, fields_of
from privrec.cli.options import (
    command_line,
    eval_config,
    eval_options,
    parse_assignments,
    parse_grad_clip,
    parse_patience,
    parse_seeds,
    seeds_checked,
)
from privrec.errors import ParameterError
from privrec.models import MODELS

BUDGET_HELP = ("For a model whose inference draws noise (DIPSGNN): refuse, running nothing, if this call would take "
               "its certified epsilon (the checkpoint's privacy ledger) past this value.")


@click.command()
# DASL needs two domains' sequences (reproduce pricdsr); the matrix models train with --target
@click.argument("model", type=click.Choice(sorted([m for m in MODELS if MODELS[m].task in ("windows", "prefixes", "cloze",
                                                                                           "merged_cloze",
                                                                                           "interactions")]
                                                  + ["dpsgd-srgnn"]), case_sensitive=False))
@click.option("--dataset", default="ml-1m", show_default=True, help="Dataset name or path to .inter/.csv/.parquet.")
@click.option("--protocol", type=click.Choice(["recbole", "recbole-masked", "raw", "s3rec", "dipsgnn"]), default="recbole",
              show_default=True,
              help="recbole: RecBole's leaderboard protocol (rating>=3, 10-core, leave-one-out, max length 50, full "
                   "ranking with the history NOT masked, no gradient clipping, SASRec positions counted from the oldest item as "
                   "RecBole counts them); recbole-masked: the same with history masked; raw: no "
                   "filtering, history masked; s3rec: S3Rec's all-items protocol on its files (Beauty, Sports, Toys, "
                   "Yelp: no filtering, leave-one-out, history masked, SASRec by one sampled negative); dipsgnn: Hu & Fang's (rating>=4, 10-core, each user's last 100 items, first "
                   "80% trains, every prefix a sample, random 10% of them validate, per-sample ranking, not masked).")
@click.option("--split", type=click.Choice(["leave_one_out", "temporal_fraction", "prefixes"]), default=None,
              help="Override the protocol's split.")
@click.option("--max-len", type=click.IntRange(min=1), default=None,
              help="Override the protocol's maximum sequence length.")
@click.option("--time-precision", type=click.Choice(["exact", "float32"]), default=None,
              help="Override the protocol's order of equal-time items: exact timestamps, or float32 ones (RecBole's "
                   "order: times on a 64-s grid, ties in file order; the recbole protocols' default).")
@click.option("--window", type=click.Choice(["all", "last"]), default="all", show_default=True,
              help="Train on every interaction or only each user's last window.")
@click.option("--stride", type=click.IntRange(min=1), default=None,
              help="Training windows overlap: one every STRIDE targets, loss on their last STRIDE positions, so every "
                   "target has >= max_len - STRIDE items of context (default max_len: non-overlapping windows; 1: every "
                   "prefix a sample, as RecBole trains, max_len times the work per epoch).")
@click.option("--epochs", type=click.IntRange(min=1), default=200, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--lr", type=float, default=1e-3, show_default=True)
@click.option("--warmup-steps", type=click.IntRange(min=0), default=0, show_default=True,
              help="Raise the lr linearly over the first N optimizer steps (BERT4Rec's recipe: 100; reproduce rr: 200 "
                   "for the transformers); 0 = none.")
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="Training forward pass: fp32, or bf16 mixed precision (torch.autocast: products in bfloat16, "
                   "weights and losses in float32; validation and test in fp32). About 2x faster for SASRec prefixes "
                   "on CPUs with AMX-BF16 (or on a GPU); slower on CPUs without it. Not with --dpsgd-epsilon.")
@click.option("--patience", default="10", show_default=True, metavar="N|none",
              help="Validations without improvement before stopping, or 'none': train all --epochs and keep the "
                   "best validated epoch (reproduce rr's fixed budget).")
@click.option("--grad-clip", default=None, metavar="NORM|none",
              help="Clip the gradient norm at NORM each step, or 'none' (default: the protocol's: none for recbole "
                   "and recbole-masked, as RecBole; 5 for raw, dipsgnn and the matrix models).")
@click.option("--select", "select_metric", default="ndcg@10", show_default=True, help="Validation metric.")
@click.option("--seeds", default="0", show_default=True, callback=seeds_checked, help="Comma-separated seeds; mean ± std is reported.")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="Model hyperparameter, e.g. --set hidden=64 --set dropout=0.2.")
@click.option("--device", default="auto", show_default=True, help="cpu, cuda, or auto.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="torch CPU threads (default: torch's, one per core). Use 1 when other jobs share the cores: "
                   "intra-op threads then wait on each other and burn CPU.")
@click.option("--epsilon", type=float, default=None,
              help="Train on a randomised-response release (Mu & Lim): every user's history before the test item "
                   "is perturbed once with this epsilon (posterior-odds bound per whole history) and written with "
                   "its certificate to OUT/release; the model reads only it, labels stay true.")
@click.option("--alternatives", type=click.Choice(["injective", "nearest", "random"]), default="injective",
              show_default=True,
              help="With --epsilon: the alternative of each item. injective: privrec's semantic matching (Thm 3.1 "
                   "holds); nearest: the paper's nearest neighbour (not injective: certified with its true odds); "
                   "random: a random cycle.")
@click.option("--short", type=click.Choice(["refuse", "paper"]), default="refuse", show_default=True,
              help="With --epsilon: users whose keep probability is < 1/2 (outside Thm 3.1) do not publish "
                   "(refuse) or publish as the paper does, with their true odds in the certificate (paper).")
@click.option("--release-seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="With --epsilon: seed of the one release every training seed reads (recorded in the certificate).")
@eval_options
@click.option("--epsilon1", type=float, default=None,
              help="apgnn/dipsgnn: the user features go through epsilon1-LDP first (DIPSGNN's piecewise + OUE; "
                   "the paper: 20); default the true features. dipsgnn's noise: --set sigma=0.228 --set clip=0.2.")
@click.option("--delta", type=float, default=1e-6, show_default=True,
              help="delta of dipsgnn's graph guarantee and of DP-SGD's.")
@click.option("--epsilon2", type=float, default=None,
              help="dipsgnn: noise sigma for this epsilon2 under --accounting (instead of --set sigma=...); edgerand: "
                   "the budget of its one graph release; dpsgd-srgnn: DP-SGD's budget (unit: one training sample); dpmf: "
                   "its objective perturbation's claimed budget (no guarantee is proven for the trained model).")
@click.option("--clip-norm", type=float, default=None, help="dipsgnn: the row norm bound C (--set clip=C).")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="srgnn/apgnn/dipsgnn/edgerand: GNN propagation steps T (--set steps=T).")
@click.option("--no-user-features", is_flag=True,
              help="apgnn/dipsgnn/edgerand: read no user features (the paper's '-U' ablations).")
@click.option("--accounting", type=click.Choice(["paper", "honest"]), default="paper", show_default=True,
              help="With --epsilon2: paper = Thm 4.2's per-pass formula (sigma 0.228 at 5, C = 0.2); honest = sigma "
                   "calibrated so every noisy pass of the whole run together meets epsilon2.")
@click.option("--dpsgd-epsilon", type=float, default=None,
              help="Train with DP-SGD (Opacus: per-sample clipping + Gaussian noise on Poisson batches of expected "
                   "size --batch-size), noise calibrated to this epsilon over --epochs; unit: one training sample (--dpsgd-unit "
                   "user: one user).")
@click.option("--dpsgd-clip", type=float, default=1.0, show_default=True,
              help="DP-SGD's per-sample (per-user with --dpsgd-unit user) gradient norm bound.")
@click.option("--dpsgd-unit", type=click.Choice(["sample", "user"]), default="sample", show_default=True,
              help="DP-SGD's unit of privacy: one training sample, or one user (each Poisson-sampled user's "
                   "gradients summed, then clipped; replace one user). dipsgnn with --epsilon2 and --dpsgd-unit user: "
                   "the model's one certificate composes its weights with its noisy aggregates.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Report folder (default runs/<model>-<dataset>).")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.option("--target", default=None,
              help="Matrix models (bpr, neumf, dmf, ddtcdr, heterocdr): the target domain of ML-1M's genre pair (action or "
                   "drama), PriCDR's protocol (two random held-out items, 99 uniform negatives, and full ranking).")
@click.option("--source", type=click.Path(file_okay=False), default=None,
              help="heterocdr: the source domain's published rating matrix, a release folder written by "
                   "'privrec publish jlt|sjlt ml-1m --aux DOMAIN' (its certificate is checked).")
@field_options
@config_option
def train(model, dataset, protocol, split, max_len, time_precision, window, stride, epochs, batch_size, lr, warmup_steps,
          precision, patience,
          grad_clip, select_metric,
          threads,
          seeds, assignments, device, epsilon, alternatives, short, release_seed, eval_mode, negatives, sampler,
          mask_history, ks, epsilon1, delta, epsilon2, clip_norm, steps, no_user_features, accounting, dpsgd_epsilon, dpsgd_clip, dpsgd_unit, out, quiet, target,
          source, **field_kw) -> None:
    """Train MODEL with early stopping on validation (or a fixed budget: --patience none); test once; write
    a report and checkpoints.

    Each seed's result is appended to OUT.progress.jsonl as soon as it is tested (removed once the
    report is written), and training state is kept per epoch in OUT.state: a killed run resumes.

    rr-bert4rec is BERT4Rec over items plus frequent item pairs merged on the histories it reads
    (--set vocab_ratio=1.5); with --epsilon it is Mu & Lim's method on privacy-filtered histories."""
    import shutil

    from privrec.experiments import sequential as seq
    from privrec.experiments import sequential_report as SR
    from privrec.experiments.report import text_table
    from privrec.models import MODELS as registry
    from privrec.models import check_config
    from privrec.training.trainer import TrainConfig, resolve_device
    from privrec.utils.io import temporary_dir
    from privrec.utils.outputs import check_output_name
    from privrec.utils.repro import environment

    model = model.lower()
    patience = parse_patience(patience)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    if model == "dpsgd-srgnn":           # SR-GNN trained with DP-SGD at the budget of the private rows
        if dpsgd_epsilon is None and epsilon2 is None:
            raise ParameterError("dpsgd-srgnn needs its budget: --epsilon2 E (or --dpsgd-epsilon E)")
        model, dpsgd_epsilon, epsilon2 = "srgnn", dpsgd_epsilon if dpsgd_epsilon is not None else epsilon2, None
    if registry[model].task == "interactions":
        if fields_of(**field_kw):
            raise ParameterError("--user-field and its siblings name the columns of your own file; the matrix models "
                                 "train on ML-1M's genre domains")
        return _train_matrix(model, dataset, target, source, epochs, batch_size, lr, warmup_steps, precision, patience,
                             parse_grad_clip(grad_clip, 5.0), select_metric, seeds, assignments, epsilon, out, quiet)
    if target or source:
        raise ParameterError("--target and --source are for the matrix models (bpr, neumf, dmf, ddtcdr, heterocdr)")
    if Path(dataset).exists():            # a file of the user's: stored absolute, so `evaluate` finds it from anywhere
        dataset = str(Path(dataset).resolve())
    preset = seq.PROTOCOLS[protocol]
    mask = preset["mask_history"] if mask_history is None else mask_history
    length = max_len or preset["max_len"]
    if stride is not None and stride > length:
        raise ParameterError(f"--stride {stride} exceeds the maximum length {length}; use 1..{length}")
    model_config = parse_assignments(assignments)
    for key, value in (("clip", clip_norm), ("steps", steps)):
        if value is not None:
            if key in model_config:
                raise ParameterError(f"give {key} once: --{'clip-norm' if key == 'clip' else key} or --set {key}=")
            model_config[key] = value
    for key, value in preset.get("model_config", {}).get(model, {}).items():
        model_config.setdefault(key, value)          # the protocol's model convention unless --set names it
    check_config(registry[model], model_config)      # before the next line, so a model without positions refuses it
    if model_config.get("positions") == "newest":    # SASRec's default, kept out of configs as the model keeps it
        del model_config["positions"]                # out: same run hash and merge as runs made before the key
    resolve_device(device)
    cfg = seq.SequentialConfig(
        dataset=dataset, fields=fields_of(**field_kw), model=model, preprocessing=preset["preprocessing"],
        split=split or preset["split"], time_precision=time_precision or preset["time_precision"], max_len=length,
        window_mode=window, stride=stride,
        model_config=model_config,
        train=TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, patience=patience, warmup_steps=warmup_steps,
                          precision=precision, grad_clip=parse_grad_clip(grad_clip, preset["grad_clip"]),
                          select_metric=select_metric, device=device, progress=not quiet),
        eval=eval_config(eval_mode, negatives, sampler, mask, ks=ks), seeds=parse_seeds(seeds),
        epsilon=epsilon, alternatives=alternatives, short=short, release_seed=release_seed,
        epsilon1=epsilon1, delta=delta, epsilon2=epsilon2, accounting=accounting, dpsgd_epsilon=dpsgd_epsilon,
        dpsgd_clip=dpsgd_clip, dpsgd_unit=dpsgd_unit, user_features=not no_user_features,
    )
    out_dir = Path(out or f"runs/{cfg.model}-{Path(str(dataset)).stem}")
    from privrec.experiments import train_output as TO
    from privrec.release.paths import check_output, input_files

    check_output_name(out_dir)
    check_output(out_dir, input_files(dataset), "--out")   # never into an input or the dataset cache
    TO.check_before_training(out_dir)                # before hours of training, not after: never delete user files
    from privrec.utils.logs import echo as log
    from privrec.utils.logs import run_log

    state_dir = TO.state_dir(out_dir)                # per-epoch training state: a killed run resumes
    env = environment()
    command = command_line()
    # each seed's result as soon as it is tested: a durable record while later seeds still train
    record = lambda run: TO.record(out_dir, {"config": cfg.to_dict(), "run": run, "environment": env,
                                             "command": command})
    with TO.seed_locks(out_dir, cfg.seeds), run_log(out_dir, command):
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = temporary_dir(out_dir)
        try:
            result = seq.run(cfg, out_dir=tmp, log=log, state_dir=state_dir, on_run=record,
                             both_maskings=True)
            result["command"] = command
            result = TO.finish(out_dir, tmp, result, SR.markdown)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        for seed in cfg.seeds:                        # this run's states only: another seed's may be resuming later
            for f in state_dir.glob(f"*-seed{seed}.pt"):
                f.unlink(missing_ok=True)
        if state_dir.is_dir() and not any(f for f in state_dir.iterdir() if f.suffix == ".pt"):
            shutil.rmtree(state_dir, ignore_errors=True)
    click.echo(f"\n{result['protocol']}, test split, {len(result['runs'])} seed(s):")
    click.echo(text_table(["model", "K", "NDCG", "HR", "Recall", "MRR"], SR.summary_rows(result, cfg.eval.ks)))
    if result.get("privacy"):
        click.echo(f"\ntrained on the release {out_dir}/release ({result['privacy']['published_users']:,} users "
                   f"published): {result['privacy']['summary'].splitlines()[0]}")
    click.echo(f"\nreport: {out_dir}/results.md  checkpoints: {out_dir}/*.pt")


def _train_matrix(model, dataset, target, source, epochs, batch_size, lr, warmup_steps, precision, patience, grad_clip,
                  select_metric, seeds, assignments, epsilon, out, quiet) -> None:
    """``train bpr|neumf|dmf|ddtcdr|heterocdr --target DOMAIN [--source RELEASE]`` (PriCDR's second stage;
    ddtcdr reads the other domain's raw interactions)."""
    from privrec.experiments import pricdr as P
    from privrec.experiments.report import pm, save_report, text_table
    from privrec.training.trainer import TrainConfig
    from privrec.utils.outputs import check_replaceable

    if dataset != "ml-1m":
        raise ParameterError("the matrix models train on ML-1M's genre domains here (--dataset ml-1m); for your own "
                             "two-domain data publish and train through the Python API (privrec.experiments.pricdr)")
    if target is None:
        raise ParameterError(f"{model} trains on one domain of a pair: give --target action or --target drama")
    if epsilon is not None or assignments:
        raise ParameterError("--epsilon and --set are not used by the matrix models; privacy comes from the "
                             "published --source release")
    if source is not None and model != "heterocdr":
        raise ParameterError(f"--source is read by heterocdr only; {model} trains on the target alone")
    cfg = P.PriCDRConfig(train=TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, patience=patience,
                                           warmup_steps=warmup_steps, precision=precision,
                                           grad_clip=grad_clip, select_metric=select_metric, progress=not quiet))
    out_dir = Path(out or f"runs/{model}-{target}")
    check_replaceable(out_dir, "train")              # before training, not after: never delete user files
    from privrec.utils.logs import echo as log
    from privrec.utils.logs import run_log

    with run_log(out_dir, command_line()):
        res = P.train_target(model, target, source, cfg, parse_seeds(seeds), log=log)
    cols = ("hr@10", "ndcg@10", "mrr@10")
    rows = [[p] + [pm(res["test"][p].get(c)) for c in cols] for p in ("sampled", "full")]
    md = (f"# {model} on ML-1M {target}" + (f" with the published source {source}" if source else "") + "\n\n"
          + text_table(["protocol", *cols], rows) + "\n"
          + (f"\nsource release guarantee: epsilon={res['guarantee']['epsilon']:.4g}, "
             f"delta={res['guarantee']['delta']:.3g}\n" if res["guarantee"] else ""))
    save_report(out_dir, res, md, kind="train")
    click.echo("\n" + md + f"\nreport: {out_dir}/results.md")


@click.command()
@click.argument("checkpoint", type=click.Path(dir_okay=False))
@click.option("--stage", type=click.Choice(["test", "valid"]), default="test", show_default=True)
@eval_options
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for sampled negatives.")
@click.option("--budget", type=float, default=None, help=BUDGET_HELP)
@click.option("--allow-changed-data", is_flag=True,
              help="Evaluate even if the dataset changed since training (its digest differs); the output says so.")
def evaluate(checkpoint, stage, eval_mode, negatives, sampler, mask_history, ks, seed, budget,
             allow_changed_data) -> None:
    """Re-evaluate a saved model on its dataset's split (e.g. with sampled ranking). A model whose inference
    draws noise (DIPSGNN) charges its privacy ledger: the checkpoint is rewritten with the raised certificate."""
    import numpy as np

    from privrec.evaluation.evaluator import evaluate as run_eval
    from privrec.experiments import sequential as seq
    from privrec.experiments.report import text_table
    from privrec.inference import TrainedModel
    from privrec.training.tasks import task_for

    trained = TrainedModel.load(checkpoint)
    cfg = trained.meta.get("config")
    if not cfg:
        raise ParameterError(f"{checkpoint}: no training config stored; cannot rebuild its split")
    from privrec.data.registry import DATASETS

    dataset = cfg["dataset"]
    if dataset not in DATASETS and not Path(dataset).is_absolute():    # checkpoints of older versions
        if not Path(dataset).exists():
            raise ParameterError(f"{checkpoint} was trained on the file {dataset!r}, a path relative to the folder "
                                 "training ran in; run evaluate from that folder")
        click.echo(f"note: reading {dataset!r} relative to {Path.cwd()} (the checkpoint stores a relative path)",
                   err=True)
    inter, split = seq.data_of(cfg)
    if len(inter.items.tokens) != len(trained.items.tokens) or not np.array_equal(
            inter.items.tokens.astype(str), trained.items.tokens.astype(str)):
        raise ParameterError(f"{checkpoint}: the dataset {cfg['dataset']!r} no longer matches the model's item ids")
    stored, digest = trained.meta.get("data_digest"), split.digest(inter.users, inter.items)
    changed = stored is not None and stored != digest
    if changed and not allow_changed_data:
        raise ParameterError(f"{checkpoint}: the dataset {cfg['dataset']!r} changed since the model was trained (its "
                             f"split's digest {digest[:12]} is not the trained {stored[:12]}): the metrics would be of "
                             "another split; restore the data, or pass --allow-changed-data to evaluate anyway")
    private = None
    if cfg.get("epsilon") is not None:     # the model reads what was published, as in training
        from privrec.experiments.rr_release import read_private

        release = Path(checkpoint).parent / "release"
        if not release.is_dir():
            raise ParameterError(f"{checkpoint} was trained on a randomised-response release, expected beside it in "
                                 f"{release}; keep the report folder together")
        private = read_private(release, inter, split)
    if cfg["split"] == "prefixes":       # per-sample evaluation, as the model was selected
        task = seq.prefix_task(split, inter.n_items, trained.max_len)
    else:
        task = task_for(trained.model, split, inter.n_items, trained.max_len,
                        window_mode=cfg.get("window_mode", "all"), private=private)
    if mask_history is None:             # the protocol the model was trained and selected under
        mask_history = bool(cfg.get("eval", {}).get("mask_history", True))
    ec = eval_config(eval_mode, negatives, sampler, mask_history, seed, ks)
    before = trained.guarantee()
    if trained.charged:                  # one noisy forward pass per evaluated sample, charged to its user
        evaluated = np.flatnonzero(task.stage_targets(stage).lengths > 0)
        trained.check_budget(budget, task.eval_batch(stage, evaluated)["user"].numpy())
    result = run_eval(trained.model, task, stage, ec)
    click.echo(f"{cfg['model']} on {cfg['dataset']}, {stage} split, {ec.label}, {result.n_users:,} users"
               + (" — ON DATA THAT CHANGED SINCE TRAINING (--allow-changed-data): not the split it was tested on"
                  if changed else "")
               + ("" if stored is not None else " (checkpoint from before data digests: the data is not verified)"))
    ks = sorted({int(k.split('@')[1]) for k in result.metrics})
    rows = [[f"@{k}"] + [f"{result.metrics[f'{m}@{k}']:.4f}" for m in ("ndcg", "hr", "recall", "mrr")] for k in ks]
    click.echo(text_table(["K", "NDCG", "HR", "Recall", "MRR"], rows))
    _charge(trained, checkpoint, before)


@click.command()
@click.argument("checkpoint", type=click.Path(dir_okay=False))
@click.option("--user", "users", multiple=True, required=True, help="Raw user id (repeatable).")
@click.option("-k", "--k", type=int, default=10, show_default=True)
@click.option("--include-seen", is_flag=True, help="Allow items the user already interacted with.")
@click.option("--budget", type=float, default=None, help=BUDGET_HELP)
@click.option("--json", "as_json", is_flag=True,
              help='Print JSON: {"USER": [{"item": ID, "score": S}, ...]} (scores are the model\'s raw scores).')
def recommend(checkpoint, users, k, include_seen, budget, as_json) -> None:
    """Top-K raw item ids for each --user from a trained CHECKPOINT. A model whose inference draws noise
    (DIPSGNN) charges its privacy ledger: the checkpoint is rewritten with the raised certificate."""
    from privrec.inference import TrainedModel

    trained = TrainedModel.load(checkpoint)
    before = trained.guarantee()
    trained.check_budget(budget, trained.user_rows(list(users)))
    recs = trained.recommend_scored(list(users), k=k, exclude_seen=not include_seen)
    if as_json:
        import json

        click.echo(json.dumps({u: [{"item": i, "score": v} for i, v in ranked] for u, ranked in recs.items()}))
    else:
        for user, ranked in recs.items():
            click.echo(f"{user}:")
            for rank, (item, score) in enumerate(ranked, 1):
                click.echo(f"  {rank:2d}. {item}  ({score:.4g})")
    _charge(trained, checkpoint, before)


def _charge(trained, checkpoint, before) -> None:
    """Write a noisy model's charged ledger back to its checkpoint and say what the call cost."""
    if not trained.charged:
        return
    trained.save(checkpoint)
    after = trained.guarantee()
    click.echo(f"privacy ledger: epsilon {before.epsilon:.6g} -> {after.epsilon:.6g} (delta {after.delta:.3g}; "
               f"{after.parameters['passes']} noisy passes of the most-read user graph), written to {checkpoint}"
               + ("" if trained.model.ledger_complete else " [this checkpoint predates the ledger: the passes "
                  "before it are not counted]"), err=True)
