"""Tiny end-to-end runs: train -> checkpoint -> recommend / evaluate, and CLI error paths."""

import json
import shlex

import numpy as np
import pytest

from privrec.cli import main
from privrec.data.preprocess import Preprocessing
from privrec.errors import ParameterError
from privrec.evaluation.evaluator import EvalConfig
from privrec.experiments import sequential as seq
from privrec.experiments import sequential_report as SR
from privrec.inference import TrainedModel
from privrec.training.trainer import TrainConfig


def tiny_cfg(path, model="sasrec", seeds=(0,)):
    return seq.SequentialConfig(
        dataset=str(path), model=model, preprocessing=Preprocessing(), max_len=6,
        model_config={"hidden": 16, "inner": 32} if model in ("sasrec", "bert4rec") else {"embedding": 16, "hidden": 16},
        train=TrainConfig(epochs=3, batch_size=16, lr=5e-3, progress=False), eval=EvalConfig(ks=(5, 10)), seeds=seeds)


@pytest.mark.parametrize("model", ["sasrec", "gru4rec", "bert4rec"])
def test_run_is_reproducible_and_saves_a_usable_checkpoint(tiny_inter_file, tmp_path, model):
    out = tmp_path / "run"
    out.mkdir()
    a = seq.run(tiny_cfg(tiny_inter_file, model), out_dir=out, log=lambda m: None)
    b = seq.run(tiny_cfg(tiny_inter_file, model), log=lambda m: None)
    assert a["runs"][0]["test"]["metrics"] == b["runs"][0]["test"]["metrics"]      # same seed, same numbers
    assert a["environment"]["torch"] and "git_commit" in a["environment"]
    if model == "sasrec":                         # a report names packages that differ from the lock's pins
        from privrec.experiments.sequential_report import markdown
        a["environment"]["lock_mismatch"] = ["numpy: lock 0.0.1, installed 2.4.6"]
        assert "other than the lock's pins" in markdown(a) and "numpy: lock 0.0.1, installed 2.4.6" in markdown(a)
        a["environment"]["lock_mismatch"] = []
        a["merged_from"] = [{"seeds": [1], "environment": {"lock_mismatch": ["scipy: lock 1, installed 2"]}}]
        assert "scipy: lock 1, installed 2" in markdown(a)
    trained = TrainedModel.load(out / f"{model}-seed0.pt")
    recs = trained.recommend(["u1", "u2"], k=5)
    assert set(recs) == {"u1", "u2"} and all(len(v) == 5 for v in recs.values())
    seen = set(trained.items.decode(trained.history.row(int(trained.users.encode(["u1"])[0]))))
    assert not seen & set(recs["u1"])                                             # seen items excluded


def test_multi_seed_aggregate(tiny_inter_file):
    res = seq.run(tiny_cfg(tiny_inter_file, seeds=(0, 1)), log=lambda m: None)
    agg = res["aggregate"]["test"]["ndcg@10"]
    vals = [r["test"]["metrics"]["ndcg@10"] for r in res["runs"]]
    assert agg["n"] == 2 and agg["mean"] == pytest.approx(np.mean(vals))
    assert agg["std"] == pytest.approx(np.std(vals, ddof=1))


def test_runs_are_also_tested_under_the_other_masking_and_reported_as_they_finish(tiny_inter_file):
    """Each seed's checkpoint is tested under both history maskings (labelled apart), and each seed's
    result reaches ``on_run`` as soon as it is tested, before later seeds train."""
    seen = []
    res = seq.run(tiny_cfg(tiny_inter_file, seeds=(0, 1)), log=lambda m: None, on_run=seen.append,
                  both_maskings=True)
    assert [r["seed"] for r in seen] == [0, 1] and seen == res["runs"]
    for r in res["runs"]:
        assert r["test"]["protocol"] == "full ranking (history masked)"
        assert r["test_other_masking"]["protocol"] == "full ranking (history not masked)"
        assert r["test_other_masking"]["metrics"].keys() == r["test"]["metrics"].keys()
    other = res["aggregate"]["test_other_masking"]["ndcg@10"]
    assert other["n"] == 2 and other["mean"] == pytest.approx(
        np.mean([r["test_other_masking"]["metrics"]["ndcg@10"] for r in res["runs"]]))
    text = SR.markdown(res)
    assert "The same checkpoints under full ranking (history not masked)" in text
    plain = seq.run(tiny_cfg(tiny_inter_file), log=lambda m: None)     # the paper pipelines do not ask for it
    assert "test_other_masking" not in plain["runs"][0] and "test_other_masking" not in plain["aggregate"]


def test_cli_train_keeps_each_finished_seed_when_a_later_step_fails(tiny_inter_file, tmp_path, monkeypatch):
    def broken(result):
        raise OSError("disk full")

    monkeypatch.setattr(SR, "markdown", broken)
    out = tmp_path / "run"
    rc = main(["train", "gru4rec", "--dataset", str(tiny_inter_file), "--protocol", "raw", "--max-len", "6",
               "--epochs", "1", "--batch-size", "16", "--seeds", "0,1", "--out", str(out), "--quiet"])
    assert rc != 0 and not out.exists()
    lines = [json.loads(x) for x in (tmp_path / "run.progress.jsonl").read_text().splitlines()]
    assert [x["run"]["seed"] for x in lines] == [0, 1] and lines[0]["config"]["model"] == "gru4rec"
    assert "ndcg@10" in lines[1]["run"]["test"]["metrics"]
    assert all("test_other_masking" in x["run"] for x in lines)       # train tests both maskings


def test_progress_records_of_a_run_that_never_reported_merge_with_reports(tiny_inter_file, tmp_path, monkeypatch):
    """Seeds trained apart (one --out each, e.g. in parallel or across sessions): a written report and
    the progress records of a run that never wrote its own merge to what one multi-seed run reports."""
    args = ["train", "gru4rec", "--dataset", str(tiny_inter_file), "--protocol", "raw", "--max-len", "6",
            "--epochs", "1", "--batch-size", "16", "--quiet"]
    assert main([*args, "--seeds", "0,1", "--out", str(tmp_path / "both")]) == 0
    png = (tmp_path / "both" / "learning_curve.png").read_bytes()     # loss and validation per epoch, per seed
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert main([*args, "--seeds", "1", "--out", str(tmp_path / "one")]) == 0
    markdown = SR.markdown
    monkeypatch.setattr(SR, "markdown", lambda result: (_ for _ in ()).throw(OSError("disk full")))
    assert main([*args, "--seeds", "0", "--out", str(tmp_path / "zero")]) != 0
    records = tmp_path / "zero.progress.jsonl"
    line = records.read_text().splitlines()[0]
    assert json.loads(line)["environment"]["lock_sha256"]             # records carry their environment
    records.write_text(line + "\n" + line + "\n{cut by a cra")          # tested twice (a resume), then a cut line
    monkeypatch.setattr(SR, "markdown", markdown)
    assert main(["results", "merge", str(records), str(tmp_path / "one" / "results.json"),
                 "--out", str(tmp_path / "m")]) == 0
    merged = json.loads((tmp_path / "m" / "results.json").read_text())
    both = json.loads((tmp_path / "both" / "results.json").read_text())
    assert merged["config"]["seeds"] == [0, 1] and merged["dataset"] == both["dataset"]
    assert merged["aggregate"]["test"] == both["aggregate"]["test"]
    assert merged["aggregate"]["test_other_masking"] == both["aggregate"]["test_other_masking"]
    assert "checkpoint" not in merged["runs"][0] and merged["runs"][1]["checkpoint"] == "gru4rec-seed1.pt"
    # every report names the command that wrote it, a merge the commands of its parts too
    one = shlex.join(["privrec", *args, "--seeds", "1", "--out", str(tmp_path / "one")])
    assert f"This report was written by: `{one}`" in (tmp_path / "one" / "results.md").read_text()
    assert json.loads(line)["command"] == shlex.join(["privrec", *args, "--seeds", "0", "--out", str(tmp_path / "zero")])
    report = (tmp_path / "m" / "results.md").read_text()
    assert "This report was written by: `privrec results merge " in report
    assert f"seeds [1] by `{one}`" in report and "seeds [0] by `privrec train gru4rec" in report
    from privrec.cli.options import INVOCATION

    assert INVOCATION == []                   # cleared when main returns: nothing stale for a later in-process call
    (tmp_path / "empty.progress.jsonl").write_text("{cut\n")
    assert main(["results", "merge", str(tmp_path / "empty.progress.jsonl"), "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()


def test_seed_runs_merge_into_one_aggregate(tiny_inter_file, tmp_path, capsys):
    """Seeds trained separately merge to exactly what one multi-seed run reports."""
    both = seq.run(tiny_cfg(tiny_inter_file, seeds=(0, 1)), log=lambda m: None)
    files = []
    for s in (1, 0):
        r = seq.run(tiny_cfg(tiny_inter_file, seeds=(s,)), log=lambda m: None)
        files.append(tmp_path / f"s{s}.json")
        files[-1].write_text(json.dumps(r))
    merged = SR.merge_seeds([json.loads(f.read_text()) for f in files])
    assert [r["seed"] for r in merged["runs"]] == [0, 1] and merged["config"]["seeds"] == [0, 1]
    assert merged["aggregate"]["test"] == both["aggregate"]["test"]
    assert main(["results", "merge", *map(str, files), "--out", str(tmp_path / "m")]) == 0
    assert "±" in (tmp_path / "m" / "results.md").read_text()
    # the training time is the runs' own (carried across a resumed run's sessions), not the commands' wall time
    merged["runs"][0]["fit"]["seconds"], merged["runs"][1]["fit"]["seconds"] = 5400.0, 1800.0
    assert "Training time summed over the runs: 2.00 h, every session" in SR.markdown(merged)
    # same seed twice, or a different configuration: refused, nothing written
    with pytest.raises(Exception, match="appear in more than one"):
        SR.merge_seeds([json.loads(files[0].read_text())] * 2)
    other = json.loads(files[0].read_text())
    other["config"]["max_len"] = 7
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert main(["results", "merge", str(files[1]), str(tmp_path / "other.json"), "--out", str(tmp_path / "x")]) == 2
    assert "differ in configuration (max_len)" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_cli_train_recommend_evaluate(tiny_inter_file, tmp_path, capsys):
    import torch

    out = tmp_path / "cli-run"
    before = torch.get_num_threads()
    try:
        rc = main(["train", "gru4rec", "--dataset", str(tiny_inter_file), "--protocol", "raw", "--max-len", "6",
                   "--epochs", "2", "--batch-size", "16", "--set", "hidden=16", "--set", "embedding=16",
                   "--threads", "1", "--out", str(out), "--quiet"])
        assert torch.get_num_threads() == 1              # --threads reached torch
    finally:
        torch.set_num_threads(before)
    assert rc == 0
    text = capsys.readouterr().out
    assert "full ranking" in text and "NDCG" in text
    result = json.loads((out / "results.json").read_text())
    assert result["config"]["model_config"]["hidden"] == 16
    assert (out / "results.md").is_file()
    assert not (tmp_path / "cli-run.state").exists()   # resume state is dropped once results are written
    assert not (tmp_path / "cli-run.progress.jsonl").exists()   # so is the per-seed record
    logged = (tmp_path / "cli-run.log").read_text(encoding="utf-8")     # the run's log file beside its report
    assert "start: privrec train gru4rec" in logged and "epoch   2" in logged and "best epoch 2" in logged
    assert main(["recommend", str(out / "gru4rec-seed0.pt"), "--user", "u3", "-k", "3"]) == 0
    assert "1." in capsys.readouterr().out
    assert main(["recommend", str(out / "gru4rec-seed0.pt"), "--user", "u3", "-k", "3", "--json"]) == 0
    ranked = json.loads(capsys.readouterr().out)["u3"]
    assert len(ranked) == 3 and all(isinstance(r["item"], str) for r in ranked)
    assert [r["score"] for r in ranked] == sorted((r["score"] for r in ranked), reverse=True)
    assert main(["evaluate", str(out / "gru4rec-seed0.pt"), "--eval-mode", "sampled", "--negatives", "5"]) == 0
    assert "sampled ranking (5 popularity negatives)" in capsys.readouterr().out
    # unknown user: one clear line, non-zero exit
    assert main(["recommend", str(out / "gru4rec-seed0.pt"), "--user", "nobody"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown user id(s) ['nobody']") and err.count("\n") == 1


def test_cli_train_never_replaces_a_folder_of_user_files(tiny_inter_file, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    rc = main(["train", "gru4rec", "--dataset", str(tiny_inter_file), "--protocol", "raw", "--max-len", "6",
               "--epochs", "1", "--out", str(out), "--quiet"])
    assert rc == 2 and "privrec never deletes" in capsys.readouterr().err
    assert [f.name for f in out.iterdir()] == ["thesis.tex"] and not (tmp_path / "mine.state").exists()


@pytest.mark.parametrize("args,needle", [
    (["train", "sasrec", "--dataset", "no-such-data"], "neither a known dataset"),
    (["datasets", "fetch", "ml-10"], "unknown dataset 'ml-10'"),
    (["train", "sasrec", "--dataset", "{bad}", "--seeds", "a,b"], "--seeds must be"),
    (["train", "bert4rec", "--dataset", "{bad}", "--epsilon", "0"], "epsilon"),
    (["train", "sasrec", "--dataset", "{bad}", "--grad-clip", "0"], "--grad-clip must be a positive number or 'none'"),
    (["train", "sasrec", "--dataset", "{bad}", "--grad-clip", "inf"], "--grad-clip must be"),
    (["train", "sasrec", "--dataset", "{bad}", "--grad-clip", "five"], "--grad-clip must be"),
    (["train", "gru4rec", "--dataset", "{bad}", "--set", "positions=newest"], "GRU4Rec has no hyperparameter 'positions'"),
    (["train", "sasrec", "--dataset", "{bad}", "--patience", "0"], "--patience must be a whole number >= 1 or 'none'"),
    (["train", "sasrec", "--dataset", "{bad}", "--patience", "soon"], "--patience must be"),
    (["recommend", "missing.pt", "--user", "1"], "no such checkpoint"),
])
def test_cli_errors_are_one_line_and_nonzero(args, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) != 0
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()                # nothing partial left behind


def _config_of(argv: list[str], monkeypatch) -> seq.SequentialConfig:
    """The SequentialConfig a `privrec train` command line builds (stopped before any data is read)."""
    seen = {}

    def stop(cfg, **kwargs):
        seen["cfg"] = cfg
        raise ParameterError("stopped before training")

    monkeypatch.setattr(seq, "run", stop)
    assert main(argv) == 2
    return seen["cfg"]


@pytest.mark.parametrize("protocol,flag,expected", [
    ("recbole", [], None), ("recbole-masked", [], None),        # RecBole 1.2.1 does not clip (clip_grad_norm: ~)
    ("raw", [], 5.0), ("dipsgnn", [], 5.0),
    ("recbole", ["--grad-clip", "5"], 5.0), ("raw", ["--grad-clip", "NONE"], None), ("raw", ["--grad-clip", "0.5"], 0.5),
])
def test_cli_train_gradient_clipping_follows_the_protocol(protocol, flag, expected, tiny_inter_file, tmp_path,
                                                          monkeypatch):
    cfg = _config_of(["train", "sasrec", "--dataset", str(tiny_inter_file), "--protocol", protocol, *flag,
                      "--out", str(tmp_path / "run"), "--quiet"], monkeypatch)
    assert cfg.train.grad_clip == expected


def test_cli_train_patience_none_is_a_fixed_budget(tiny_inter_file, tmp_path, monkeypatch):
    argv = ["train", "bert4rec", "--dataset", str(tiny_inter_file), "--out", str(tmp_path / "run"), "--quiet"]
    assert _config_of(argv, monkeypatch).train.patience == 10
    assert _config_of([*argv, "--patience", "none"], monkeypatch).train.patience is None
    assert _config_of([*argv, "--patience", "4"], monkeypatch).train.patience == 4


def test_cli_train_warmup_reaches_the_config_and_stays_out_of_its_hash_at_zero(tiny_inter_file, tmp_path, monkeypatch):
    from privrec.utils.repro import config_hash, without_later_defaults

    argv = ["train", "bert4rec", "--dataset", str(tiny_inter_file), "--out", str(tmp_path / "run"), "--quiet"]
    plain, warm = _config_of(argv, monkeypatch), _config_of([*argv, "--warmup-steps", "100"], monkeypatch)
    assert plain.train.warmup_steps == 0 and warm.train.warmup_steps == 100
    assert "warmup_steps" not in without_later_defaults(plain.to_dict())["train"]
    assert config_hash(plain.to_dict()) != config_hash(warm.to_dict())
    assert main([*argv, "--warmup-steps", "-1"]) != 0


def test_a_setting_added_at_the_top_level_leaves_an_older_nested_one_of_the_same_name_hashed():
    """PriCDR's ``min_rating`` (new, top level) at its default stays out of the hash; the sequential and RR
    configs' older ``preprocessing.min_rating`` (None there too) stays in it, so their recorded runs still match."""
    from privrec.utils.repro import config_hash

    assert config_hash({"min_rating": None, "a": 1}) == config_hash({"a": 1})
    assert config_hash({"min_rating": 3.0, "a": 1}) != config_hash({"a": 1})
    assert config_hash({"preprocessing": {"min_rating": None}}) != config_hash({"preprocessing": {}})


@pytest.mark.parametrize("model,protocol,flag,expected", [
    ("sasrec", "recbole", [], {"positions": "oldest"}),             # RecBole's convention under its protocol
    ("sasrec", "recbole-masked", [], {"positions": "oldest"}),
    # --set wins; newest (the default) stays out of the config, as in runs made before the preset named positions,
    # so a state or report of theirs resumes and merges with it
    ("sasrec", "recbole", ["--set", "positions=newest"], {}),
    ("sasrec", "raw", [], {}), ("sasrec", "dipsgnn", [], {}), ("gru4rec", "recbole", [], {}),
])
def test_cli_train_model_conventions_follow_the_protocol(model, protocol, flag, expected, tiny_inter_file, tmp_path,
                                                         monkeypatch):
    cfg = _config_of(["train", model, "--dataset", str(tiny_inter_file), "--protocol", protocol, *flag,
                      "--out", str(tmp_path / "run"), "--quiet"], monkeypatch)
    assert cfg.model_config == expected


def test_train_refuses_to_start_over_beside_a_state_of_the_same_seed_from_other_settings(tiny_inter_file, tmp_path,
                                                                                          capsys):
    """A state made with other settings (e.g. before the recbole preset stopped clipping) would be deleted when a
    run with the new settings finished: the run refuses to start, and the state stays."""
    states = tmp_path / "run.state"
    states.mkdir()
    (states / "0123456789abcdef-seed1.pt").write_bytes(b"another run's progress")
    rc = main(["train", "gru4rec", "--dataset", str(tiny_inter_file), "--protocol", "raw", "--max-len", "6",
               "--epochs", "1", "--batch-size", "16", "--seeds", "0,1", "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "is a training state of seed 1 made with other settings" in err and "--grad-clip 5" in err
    assert "--set positions=newest" in err
    assert (states / "0123456789abcdef-seed1.pt").read_bytes() == b"another run's progress"
    assert not (tmp_path / "run").exists()
    assert main(["train", "gru4rec", "--dataset", str(tiny_inter_file), "--protocol", "raw", "--max-len", "6",
                 "--epochs", "1", "--batch-size", "16", "--seeds", "0", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert [f.name for f in states.iterdir()] == ["0123456789abcdef-seed1.pt"]     # seed 0's own state is gone


def test_train_reports_name_seeds_resumed_across_locks_and_parts_from_other_locks(tiny_inter_file, tmp_path):
    result = seq.run(tiny_cfg(tiny_inter_file, "gru4rec", seeds=(0, 1)), log=lambda m: None)
    lock = result["environment"]["lock_sha256"]
    assert result["runs"][0]["fit"]["epochs_by_lock"] == {lock or "no lock": 3}
    assert "another lock" not in SR.markdown(result) and "different locks" not in SR.markdown(result)
    result["runs"][0]["fit"]["epochs_by_lock"] = {"0583547726f2ebea": 3}     # seed 0: a part from another lock
    result["runs"][1]["fit"]["epochs_by_lock"] = {"unrecorded": 2, lock: 1}     # seed 1: resumed after a bump
    result["merged_from"] = [{"seeds": [0], "environment": {"lock_sha256": "0583547726f2ebea"}},
                             {"seeds": [1], "environment": {"lock_sha256": lock}}]
    text = SR.markdown(result)
    assert ("Trained some epochs under another lock than the one the seed finished under, or resumed a state that "
            f"did not record its lock: seed 1 (2 epochs under an unrecorded lock (a state saved before states kept "
            f"it), 1 epoch under {lock})." in text)
    assert "seed 0 (" not in text          # all its epochs ran under the lock its part finished under
    assert f"Merged parts finished under different locks: seeds [0] under 0583547726f2ebea; seeds [1] under {lock}" in text
    assert result["runs"][0]["fit"]["epochs_by_precision"] == {"fp32": 3} and "precision (" not in text
    result["runs"][1]["fit"]["epochs_by_precision"] = {"bf16": 2, "fp32": 1}   # seed 1: a bf16 state resumed in fp32
    assert ("Resumed at another forward-pass precision (`--precision`; validation and test always run in fp32): "
            "seed 1 (2 epochs at bf16, 1 epoch at fp32)." in SR.markdown(result))


def test_cli_bad_file_and_kcore(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.inter"
    bad.write_text("user_id:token\titem_id:token\ttimestamp:float\nu1\ti1\tnoon\n")
    assert main(["train", "sasrec", "--dataset", str(bad), "--protocol", "raw"]) == 2
    assert "timestamp:float has non-numeric value 'noon'" in capsys.readouterr().err
    good = tmp_path / "small.inter"
    good.write_text("user_id:token\titem_id:token\trating:float\ttimestamp:float\nu1\ti1\t5\t1\nu1\ti2\t5\t2\n")
    assert main(["train", "sasrec", "--dataset", str(good)]) == 2          # recbole protocol: 10-core
    assert "core is empty" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_cli_help_on_every_command(capsys):
    for cmd in (["--help"], ["datasets", "--help"], ["datasets", "info", "--help"], ["train", "--help"],
                ["evaluate", "--help"], ["recommend", "--help"], ["demo", "--help"], ["reproduce", "pricdsr", "--help"],
                ["publish", "--help"], ["guarantee", "--help"], ["audit", "--help"], ["results", "merge", "--help"]):
        assert main(cmd) == 0
    assert "Usage" in capsys.readouterr().out


def test_a_checkpoint_altered_after_saving_is_refused(tiny_inter_file, tmp_path, capsys):
    import torch

    out = tmp_path / "run"
    out.mkdir()
    seq.run(tiny_cfg(tiny_inter_file, "gru4rec"), out_dir=out, log=lambda m: None)
    path = out / "gru4rec-seed0.pt"
    TrainedModel.load(path)                                           # as written: accepted
    payload = torch.load(path, weights_only=True)
    name = next(iter(payload["state_dict"]))
    payload["state_dict"][name].view(-1)[0] += 1e-3                   # one weight nudged
    torch.save(payload, path)
    assert main(["recommend", str(path), "--user", "u1"]) == 2
    assert "SHA-256 mismatch" in capsys.readouterr().err


def test_cli_train_on_a_randomised_response_release(tiny_inter_file, tmp_path, capsys):
    """train --epsilon: every history published once (certificate beside the report), the merged
    BERT4Rec learns its merges on and reads only the release, its checkpoint keeps only what was
    published, and evaluate reads the same release."""
    out = tmp_path / "rr"
    rc = main(["train", "rr-bert4rec", "--dataset", str(tiny_inter_file), "--protocol", "raw", "--max-len", "6",
               "--epochs", "2", "--batch-size", "16", "--set", "hidden=16", "--set", "inner=32", "--set",
               "vocab_ratio=1.2", "--epsilon", "0.5", "--alternatives", "random", "--out", str(out), "--quiet"])
    assert rc == 0
    assert "trained on the release" in capsys.readouterr().out
    cert = json.loads((out / "release" / "certificate.json").read_text())
    assert cert["guarantee"]["epsilon"] == pytest.approx(0.5) and cert["input"]["alternatives"] == "random"
    assert cert["input"]["published_users"] == 30 and cert["randomness"]["seed"] == 0
    result = json.loads((out / "results.json").read_text())
    assert result["config"]["epsilon"] == 0.5 and result["privacy"]["published_users"] == 30
    assert "randomised-response release" in (out / "results.md").read_text()
    trained = TrainedModel.load(out / "rr-bert4rec-seed0.pt")
    assert trained.model.merges.vocab_size == 48                      # 1.2 x 40 items
    true = seq.prepare(str(tiny_inter_file), Preprocessing(), "leave_one_out")[1].history("test")
    assert np.array_equal(trained.history.lengths, true.lengths)     # the test item is never published
    assert not np.array_equal(trained.history.items, true.items)     # and the rest is perturbed
    assert main(["recommend", str(out / "rr-bert4rec-seed0.pt"), "--user", "u3", "-k", "3"]) == 0
    assert main(["evaluate", str(out / "rr-bert4rec-seed0.pt")]) == 0
    assert "ndcg" in capsys.readouterr().out.lower()


def test_a_private_run_reuses_its_release_and_needs_a_place_for_it(tiny_inter_file, tmp_path):
    from dataclasses import replace

    cfg = replace(tiny_cfg(tiny_inter_file, "gru4rec"), epsilon=0.5, alternatives="random")
    with pytest.raises(Exception, match="needs a folder"):
        seq.run(cfg, log=lambda m: None)
    a = seq.run(cfg, log=lambda m: None, release_dir=tmp_path / "rel")
    created = json.loads((tmp_path / "rel" / "certificate.json").read_text())["created"]
    b = seq.run(cfg, log=lambda m: None, release_dir=tmp_path / "rel")   # read back, not published again
    assert json.loads((tmp_path / "rel" / "certificate.json").read_text())["created"] == created
    assert a["runs"][0]["test"] == b["runs"][0]["test"]
    with pytest.raises(ParameterError, match=r"epsilon = 0.5 \(wanted 0.1\)"):      # not another ε's release
        seq.run(replace(cfg, epsilon=0.1), log=lambda m: None, release_dir=tmp_path / "rel")
    raw = seq.run(tiny_cfg(tiny_inter_file, "gru4rec"), log=lambda m: None)
    assert raw["runs"][0]["test"] != a["runs"][0]["test"] and "privacy" not in raw
    with pytest.raises(Exception, match="alternatives must be one of"):
        replace(cfg, alternatives="closest")


def test_top_level_help_lines_match_each_commands_own_and_load_no_torch():
    """``privrec --help`` and a mistyped command answer without importing any subcommand (torch, pandas, ...);
    the help lines kept for them in LAZY_COMMANDS say what each command's own docstring says."""
    import subprocess
    import sys

    import click
    from click.utils import make_default_short_help

    from privrec.cli import LAZY_COMMANDS, cli

    ctx = click.Context(cli)
    for name, (_, text) in LAZY_COMMANDS.items():
        for limit in (45, 65, 85, 300):
            assert make_default_short_help(text, limit) == cli.get_command(ctx, name).get_short_help_str(limit), name
    code = ("import sys; from privrec.cli import main; rc = main(['--help']); "
            "print(sorted(m for m in ('torch', 'pandas', 'privrec.models', 'dp_accounting') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
    # a reproduce command's --help and a malformed --seeds answer before torch or the data layer loads
    for argv in (["reproduce", "pricdr", "--help"], ["reproduce", "pfcr", "--seeds", "x", "--report-only"]):
        code = (f"import sys; from privrec.cli import main; rc = main({argv!r}); "
                "print(sorted(m for m in ('torch', 'pandas', 'privrec.models') if m in sys.modules))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
        assert out.strip().splitlines()[-1] == "[]", argv


def test_a_missing_optional_package_names_the_extra_to_install(monkeypatch, capsys, tmp_path):
    """A command whose optional dependency is absent says which extra installs it (not an internal error)."""
    import privrec.cli.privacy as P

    def missing(*a, **k):
        raise ModuleNotFoundError("No module named 'opacus'", name="opacus")

    monkeypatch.setattr(P, "_sequence_rows", missing)
    monkeypatch.chdir(tmp_path)
    assert main(["publish", "sdp", "ml-100k", "-o", "x", "--epsilon", "1"]) == 2
    assert not (tmp_path / "x").exists()
    err = capsys.readouterr().err
    assert err.startswith("error: this command needs the optional package 'opacus'") and "'.[dp]'" in err


def test_field_options_name_a_files_columns(tmp_path, capsys):
    """--user-field / --item-field / --rating-field / --time-field read a file whose header privrec does not
    recognise; a wrong name is one line listing the file's columns; a registered dataset refuses them."""
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"customer": rng.integers(0, 40, n).astype(str), "product": rng.integers(0, 30, n).astype(str),
                          "stars": rng.integers(1, 6, n).astype(float), "ts_ms": np.arange(n) * 1000.0})
    frame.to_csv(tmp_path / "shop.csv", index=False)
    assert main(["datasets", "info", str(tmp_path / "shop.csv")]) == 2          # nothing recognisable: refused
    capsys.readouterr()
    fields = ["--user-field", "customer", "--item-field", "product", "--rating-field", "stars", "--time-field", "ts_ms"]
    assert main(["datasets", "info", str(tmp_path / "shop.csv"), *fields]) == 0
    assert "users         40" in capsys.readouterr().out
    assert main(["datasets", "info", str(tmp_path / "shop.csv"), "--user-field", "client"]) == 2
    assert "no column 'client' in the file; its columns are customer, product, stars, ts_ms" in capsys.readouterr().err
    assert main(["publish", "sdp", str(tmp_path / "shop.csv"), *fields, "-o", str(tmp_path / "rel"),
                 "--epsilon", "5", "--seed", "0"]) == 0
    assert (tmp_path / "rel" / "certificate.json").is_file()
    assert main(["datasets", "info", "ml-100k", "--user-field", "x"]) == 2
    assert "registered dataset" in capsys.readouterr().err


def test_default_report_folders_keep_quick_and_testbed_runs_apart():
    from privrec.cli.options import default_out

    assert default_out("pricdsr", None) == "reports/pricdsr"
    assert default_out("pricdsr", None, "cold3", quick=True) == "reports/pricdsr-cold3-quick"
    assert default_out("rr-beauty", None, quick=True) == "reports/rr-beauty-quick"
    assert default_out("pfcr", "mine", "cold3", quick=True) == "mine"
    import click

    from privrec.cli.demo import demo

    assert next(p for p in demo.params if p.name == "out").default == default_out("pricdsr", None, quick=True)
    assert isinstance(demo, click.Command)


def test_train_reads_your_own_column_names_and_its_checkpoint_finds_them_again(tiny_frame, tmp_path):
    """``--user-field`` and its siblings on ``train`` (issue 80): a CSV whose header privrec does not recognise
    trains, and ``evaluate`` re-reads the file with the same mapping from the checkpoint."""
    src = tmp_path / "shop.csv"
    tiny_frame.rename(columns={"user_id": "customer", "item_id": "product", "rating": "stars",
                               "timestamp": "ts_ms"}).to_csv(src, index=False)
    args = ["train", "gru4rec", "--dataset", str(src), "--protocol", "raw", "--max-len", "6", "--epochs", "1",
            "--batch-size", "16", "--quiet", "--out", str(tmp_path / "run")]
    assert main(args) != 0                                       # columns it cannot recognise: refused
    fields = ["--user-field", "customer", "--item-field", "product", "--rating-field", "stars", "--time-field", "ts_ms"]
    assert main([*args, *fields]) == 0
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["config"]["fields"] == {"user": "customer", "item": "product", "rating": "stars", "time": "ts_ms"}
    assert main(["evaluate", str(tmp_path / "run" / "gru4rec-seed0.pt")]) == 0
