"""``--config FILE`` (TOML or YAML, flags override) and ``privrec rerun``: the same run three ways, the same
numbers; a typo in a config file is refused, naming the valid options."""

from __future__ import annotations

import json

import torch

from privrec.cli import main

FLAGS = ["--protocol", "raw", "--max-len", "6", "--epochs", "2", "--batch-size", "16", "--set", "hidden=16",
         "--set", "embedding=16", "--threads", "1", "--quiet"]


def _metrics(folder) -> list:
    runs = json.loads((folder / "results.json").read_text(encoding="utf-8"))["runs"]
    return [r["test"] for r in runs]


def test_a_config_file_and_a_rerun_give_the_flags_numbers(tiny_inter_file, tmp_path, capsys):
    before = torch.get_num_threads()
    try:
        assert main(["train", "gru4rec", "--dataset", str(tiny_inter_file), *FLAGS, "--out", str(tmp_path / "a")]) == 0
        toml = tmp_path / "run.toml"
        toml.write_text(f'model = "gru4rec"\ndataset = "{tiny_inter_file}"\nprotocol = "raw"\nmax-len = 6\n'
                        'epochs = 2\nbatch_size = 16\nset = ["hidden=16", "embedding=16"]\nthreads = 1\nquiet = true\n',
                        encoding="utf-8")
        assert main(["train", "--config", str(toml), "--out", str(tmp_path / "b")]) == 0
        assert _metrics(tmp_path / "b") == _metrics(tmp_path / "a")
        yaml = tmp_path / "run.yaml"
        yaml.write_text(f"model: gru4rec\ndataset: {tiny_inter_file}\nprotocol: raw\nmax_len: 6\nepochs: 5\n"
                        "batch-size: 16\nset: [hidden=16, embedding=16]\nthreads: 1\nquiet: true\n", encoding="utf-8")
        assert main(["train", "--config", str(yaml), "--epochs", "2", "--out", str(tmp_path / "c")]) == 0  # flag wins
        assert _metrics(tmp_path / "c") == _metrics(tmp_path / "a")
        assert main(["rerun", str(tmp_path / "a" / "results.json"), "--out", str(tmp_path / "d")]) == 0
        assert _metrics(tmp_path / "d") == _metrics(tmp_path / "a")
        recorded = json.loads((tmp_path / "d" / "results.json").read_text(encoding="utf-8"))["command"]
        assert recorded.endswith(f"--out {tmp_path / 'd'}") and recorded.startswith("privrec train gru4rec")
    finally:
        torch.set_num_threads(before)


def test_a_typo_in_a_config_file_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("epochs = 2\nmax_lenn = 6\n", encoding="utf-8")
    assert main(["train", "gru4rec", "--config", str(bad), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "unknown option(s) max_lenn" in err and "max-len" in err and not (tmp_path / "x").exists()
    assert main(["reproduce", "pricdsr", "--config", str(bad), "--out", str(tmp_path / "y")]) == 2
    assert "unknown option(s) max_lenn" in capsys.readouterr().err
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n", encoding="utf-8")
    assert main(["train", "gru4rec", "--config", str(tmp_path / "list.yaml")]) == 2
    assert "a mapping" in capsys.readouterr().err


def test_rerun_refuses_a_report_without_a_command(tmp_path, capsys):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "results.json").write_text('{"command": null}', encoding="utf-8")
    assert main(["rerun", str(tmp_path / "r"), "--out", str(tmp_path / "z")]) == 2
    assert "records no privrec command" in capsys.readouterr().err
