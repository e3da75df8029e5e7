"""A forged certificate is never believed (issue 76, item 3): the guarantee is recomputed from its own
parameters, what it says about the data is checked against the data, and a checkpoint refuses data
that changed since it was trained."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privrec.cli import main
from privrec.errors import ReleaseError
from privrec.release import read_release


@pytest.fixture
def toy(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"user_id": f"u{u}", "item_id": f"{'a' if i < 20 else 'd'}{i}", "rating": float(rng.integers(1, 6)),
             "timestamp": float(t), "domain": "A" if i < 20 else "D"}
            for u in range(30) for t, i in enumerate(rng.choice(60, 12, replace=False))]
    path = tmp_path / "toy.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _publish(toy, out, mechanism, *extra):
    assert main(["publish", mechanism, str(toy), "-o", str(out), "--epsilon", "1", "--seed", "0", *extra]) == 0
    return json.loads((out / "certificate.json").read_text())


def _edit(folder, change):
    cert = json.loads((folder / "certificate.json").read_text())
    change(cert)
    (folder / "certificate.json").write_text(json.dumps(cert))


@pytest.mark.parametrize("mechanism,extra", [("sdp", ()), ("jlt", ("--n-prime", "4")), ("sjlt", ("--n-prime", "4"))])
def test_an_edited_epsilon_summary_or_parameter_is_refused(toy, tmp_path, mechanism, extra):
    out = tmp_path / mechanism
    cert = _publish(toy, out, mechanism, *extra)
    assert read_release(out)                                         # as issued: believed
    true_eps = cert["guarantee"]["epsilon"]
    _edit(out, lambda c: c["guarantee"].__setitem__("epsilon", 1e-9))
    with pytest.raises(ReleaseError, match=f"guarantee.epsilon is 1e-09, its parameters give {true_eps!r}"):
        read_release(out)
    _edit(out, lambda c: c["guarantee"].__setitem__("epsilon", true_eps))
    read_release(out)
    _edit(out, lambda c: c.__setitem__("summary", "epsilon-DP: epsilon=1e-09 per user"))
    with pytest.raises(ReleaseError, match="the summary does not state"):
        read_release(out)
    _edit(out, lambda c: c.__setitem__("summary", cert["summary"]))
    key = "w" if mechanism != "sdp" else "max_len"                  # parameters no longer give the stated numbers
    _edit(out, lambda c: c["guarantee"]["parameters"].__setitem__(key, c["guarantee"]["parameters"][key] * 2))
    with pytest.raises(ReleaseError, match="edited after it was issued"):
        read_release(out)


@pytest.mark.parametrize("change,needle", [
    (lambda c: c.pop("guarantee"), "no readable guarantee"),
    (lambda c: c.__setitem__("guarantee", "strong"), "no readable guarantee"),
    (lambda c: c["guarantee"].__setitem__("mechanism", "magic"), "names mechanism|unknown mechanism"),
    (lambda c: c["output"].__setitem__("files", ["a.inter"]), "lists no data files"),
    (lambda c: c["guarantee"]["parameters"].pop("n_items"), "parameters do not describe"),
])
def test_malformed_certificates_are_refused_in_one_line(toy, tmp_path, change, needle, capsys):
    out = tmp_path / "r"
    _publish(toy, out, "sdp")
    _edit(out, change)
    with pytest.raises(ReleaseError, match=needle):
        read_release(out)


def test_a_certificate_claiming_another_domain_is_refused(tmp_path):
    """The forger publishes domain A and edits the certificate to say D (so a reader training on D would
    read A's... or, the other way round, its own target's matrix as a 'source')."""
    from privrec.data.crossdomain import load_cross_domain
    from privrec.release.crossdomain import read_domain_matrix

    rng = np.random.default_rng(1)
    rows = [{"user_id": f"u{u}", "item_id": f"{d}{i}", "rating": 4.0, "timestamp": float(t), "domain": d}
            for u in range(40) for d, n, k in (("A", 10, 8), ("D", 25, 12))
            for t, i in enumerate(rng.choice(n, k, replace=False))]
    src = tmp_path / "two.csv"
    pd.DataFrame(rows).to_csv(src, index=False)
    out = tmp_path / "a"
    assert main(["publish", "jlt", str(src), "-o", str(out), "--epsilon", "1", "--seed", "0", "--n-prime", "4",
                 "--aux", "A", "--domain-field", "domain"]) == 0
    data = load_cross_domain(str(src), "domain")
    assert read_domain_matrix(out, data).shape[1] == 4
    _edit(out, lambda c: c["input"].__setitem__("domain", "D"))     # claims the other domain
    with pytest.raises(ReleaseError, match="claims domain 'D', which has 25 items, but it was issued for 10"):
        read_domain_matrix(out, data)


def test_evaluate_refuses_a_dataset_that_changed_since_training(tiny_inter_file, tmp_path, capsys):
    """Same ids, reversed timestamps: another split. Refused, or evaluated with a label when asked."""
    from privrec.data.atomic import read_atomic, write_atomic

    out = tmp_path / "run"
    assert main(["train", "gru4rec", "--dataset", str(tiny_inter_file), "--protocol", "raw", "--max-len", "6",
                 "--epochs", "1", "--batch-size", "16", "--out", str(out), "--quiet"]) == 0
    ckpt = str(out / "gru4rec-seed0.pt")
    assert main(["evaluate", ckpt]) == 0
    assert "CHANGED" not in capsys.readouterr().out
    frame, types = read_atomic(tiny_inter_file)
    frame["timestamp"] = frame["timestamp"].max() - frame["timestamp"]
    write_atomic(frame, tiny_inter_file, types)
    assert main(["evaluate", ckpt]) == 2
    err = capsys.readouterr().err
    assert "changed since the model was trained" in err and "--allow-changed-data" in err
    assert main(["evaluate", ckpt, "--allow-changed-data"]) == 0
    assert "ON DATA THAT CHANGED SINCE TRAINING" in capsys.readouterr().out
