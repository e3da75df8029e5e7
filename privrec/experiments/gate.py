"""The positive-control gate every cross-domain report passes before it judges a privacy claim.

A privacy claim of a cross-domain system ("the private release still transfers knowledge")
can only be judged on a testbed where transfer is real. Two paired-seed checks decide it:

1. **positive control**: the non-private cross-domain model beats its single-domain
   counterpart (DASL vs DASL-single, HeteroCDR-raw vs DMF, PFCR with clear uploads vs
   PFCR-FD);
2. **information control**: it also beats the same cross-domain model fed an auxiliary domain of
   pure noise of the release's shape, so the gain is the auxiliary domain's *information*,
   not the extra capacity, loss terms or training steps of the cross-domain model.

Both must hold with the mean paired difference positive and the two-sided paired t-test at
``ALPHA``. One seed gives no verdict; two seeds can pass the gate but not fail it (with one degree of
freedom a real gain rarely reaches p < 0.05: a two-seed failure says "not yet", and ``DECIDED_SEEDS``
paired seeds, the issue's three, decide a failure). Where the gate fails the report prints "no verdict: the
non-private model shows no transfer on this testbed" in place of claim verdicts; claim rows are
still shown, as numbers, not verdicts.

A second, model-free gate reads :mod:`privrec.evaluation.transfer_probe`: where the raw auxiliary
rows beat popularity and noise as a user-kNN, the data carries transfer whatever a model makes of
it, and a release is judged by its own lead over noise (:func:`probe_verdict`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from privrec.experiments.stats import ALPHA, paired, paired_cell, significant, verdict

DECIDED_SEEDS = 3
NO_TRANSFER = "no verdict: the non-private model shows no transfer on this testbed"
TOO_FEW = "no verdict yet: the gate needs at least 2 paired seeds"
NOT_YET = f"no verdict yet: not significant on 2 paired seeds; a failure is decided on {DECIDED_SEEDS}"


@dataclass(frozen=True)
class Gate:
    """One direction's gate: both checks (``paired(...).to_dict()`` or None where a side is missing)."""

    where: str                         # e.g. "action ← drama"
    metric: str
    cross: str                         # the names of the three models, as the report shows them
    single: str
    noise: str
    positive: dict | None
    information: dict | None

    @staticmethod
    def _passes(check: dict | None) -> bool:
        return check is not None and check["difference"]["mean"] > 0 and significant(check)

    @property
    def passed(self) -> bool:
        return self._passes(self.positive) and self._passes(self.information)

    @property
    def decided(self) -> bool:
        """Both checks ran on enough paired seeds: two where the gate passes, ``DECIDED_SEEDS`` where it fails."""
        checks = (self.positive, self.information)
        if not all(c is not None and len(c["seeds"]) >= 2 for c in checks):
            return False
        return self.passed or all(len(c["seeds"]) >= DECIDED_SEEDS for c in checks)

    @property
    def verdict(self) -> str:
        if self.positive is None or self.information is None:
            missing = [n for n, c in ((self.single, self.positive), (self.noise, self.information)) if c is None]
            return f"no verdict yet: no paired runs of {self.cross} with {' and '.join(missing)}"
        if not self.decided:
            return TOO_FEW if min(len(self.positive["seeds"]), len(self.information["seeds"])) < 2 else NOT_YET
        if self.passed:
            return "gate passed: the testbed carries transfer"
        failed = [f"{self.cross} vs {n}" for n, c in ((self.single, self.positive), (self.noise, self.information))
                  if not self._passes(c)]
        return f"{NO_TRANSFER} ({'; '.join(failed)}: not ahead at p < {ALPHA:g})"

    def to_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed, "decided": self.decided, "verdict": self.verdict}


def gate(where: str, metric: str, values: dict[str, dict[int, float]], cross: str, single: str, noise: str) -> Gate:
    """The gate of one direction from ``values[model] = {seed: metric}``."""
    def check(other: str) -> dict | None:
        p = paired(values.get(cross, {}), values.get(other, {}))
        return None if p is None else p.to_dict()

    return Gate(where, metric, cross, single, noise, check(single), check(noise))


def passed(gates: list[dict], where: str, metric: str | None = None) -> bool:
    """Whether the gates of ``where`` in a report's ``gates`` passed: the one of ``metric`` where the
    report gates that metric, else every one (one per metric)."""
    return all(g["passed"] for g in _of(gates, where, metric)) and bool(_of(gates, where, metric))


def _of(gates: list[dict], where: str, metric: str | None) -> list[dict]:
    mine = [g for g in gates if g["where"] == where]
    same = [g for g in mine if g.get("metric") == metric]
    return same if metric is not None and same else mine


def markdown(gates: list[dict]) -> list[str]:
    """The gate section of a report: both checks per direction and metric, and the verdict."""
    from privrec.experiments.report import markdown_table

    if not gates:
        return []
    rows = [[g["where"], g["metric"], f"{g['cross']} − {g['single']}", paired_cell(g["positive"]),
             f"{g['cross']} − {g['noise']}", paired_cell(g["information"]), g["verdict"]] for g in gates]
    return ["## Positive-control gate (before any privacy verdict)", "",
            "A privacy claim is judged only where the non-private cross-domain model beats its single-domain "
            "counterpart (positive control) *and* the same model fed an auxiliary domain of pure noise of the "
            f"release's shape (information control), each paired by seed with a two-sided paired t-test at "
            f"p < {ALPHA:g}. Cells: mean paired difference ± std (seeds ahead, p).", "",
            markdown_table(["direction", "metric", "positive control", "difference", "information control",
                            "difference", "gate"], rows), ""]


def claim_verdict(check: dict | None, gates: list[dict], where: str, metric: str | None = None) -> str:
    """"A beats B" read from a paired check, only where the gate of ``where`` passed — on the check's own
    ``metric`` where the report gates each metric (a sampled-ranking claim needs the sampled-ranking gate)."""
    if not passed(gates, where, metric):
        mine = _of(gates, where, metric)
        if mine and all(g.get("decided", True) for g in mine):
            return NO_TRANSFER
        return next((g["verdict"] for g in mine if g["verdict"] == NOT_YET), TOO_FEW)
    return verdict(check)


# The papers' own datasets (as printed in their dataset tables; interactions / users and density computed where a
# paper prints neither): (paper, dataset, users, items, interactions, mean length, density)
PAPER_DATASETS: dict[str, list[tuple]] = {
    "pricdsr": [("PriCDSR Table I", "Amazon Movie", 10929, 59513, 460220, 42.11, 0.000708),
                ("PriCDSR Table I", "Amazon CD", 10929, 91169, 344264, 31.50, 0.000346),
                ("PriCDSR Table I", "Amazon Book", 10929, 236049, 607652, 55.60, 0.000236)],
    "pricdr": [("PriCDR Table 3", "Amazon Music (→ Book)", 16367, 18467, 233251, 14.25, 0.0008),
               ("PriCDR Table 3", "Amazon Book (← Music)", 16367, 23988, 291325, 17.80, 0.0007),
               ("PriCDR Table 3", "Amazon Movie (→ Music)", 15914, 19794, 416228, 26.15, 0.0013),
               ("PriCDR Table 3", "Amazon Music (← Movie)", 15914, 20058, 280398, 17.62, 0.0008),
               ("PriCDR Table 3", "Amazon Movie (→ Book)", 29476, 24091, 591258, 20.06, 0.0008),
               ("PriCDR Table 3", "Amazon Book (← Movie)", 29476, 41884, 579131, 19.65, 0.0005),
               ("PriCDR Table 3", "Douban Book (→ Music)", 924, 3916, 50429, 54.58, 0.0139),
               ("PriCDR Table 3", "Douban Music (← Book)", 924, 4228, 50157, 54.28, 0.0128),
               ("PriCDR Table 3", "Douban Movie (→ Book)", 1574, 9471, 744983, 473.3, 0.0499),
               ("PriCDR Table 3", "Douban Book (← Movie)", 1574, 6139, 85602, 54.39, 0.0089),
               ("PriCDR Table 3", "Douban Movie (→ Music)", 1055, 9386, 557989, 528.9, 0.0563),
               ("PriCDR Table 3", "Douban Music (← Movie)", 1055, 4981, 60626, 57.47, 0.0115)],
    "pfcr": [("PFCR Table 4", "Office", 87436, 25986, 684837, 7.84, 0.000301),
             ("PFCR Table 4", "Arts", 45486, 21019, 395150, 8.69, 0.000413),
             ("PFCR Table 4", "OnlineRetail", 16520, 3469, 519906, 31.47, 0.00907),
             ("PFCR Table 4", "Pantry", 13101, 4898, 126962, 9.69, 0.00198)],
}


def testbed_markdown(testbed: dict, statistics: dict[str, list[dict]], paper: str) -> list[str]:
    """The report's dataset section: the testbed (what was cut, how to build it), each direction's domain
    statistics, and the paper's own datasets beside them."""
    from privrec.data.testbed import Testbed
    from privrec.experiments.report import markdown_table

    bed = Testbed(**testbed)
    rows = []
    for where, stats in statistics.items():
        for s in stats:
            rows.append([where, f"{s['domain']} ({s['role']})", f"{s['users']:,}", f"{s['items']:,}",
                         f"{s['interactions']:,}", f"{s['avg_seq_len']:.1f}", f"{100 * s['density']:.2f}%",
                         f"{s['eval_users']:,}" if "eval_users" in s else "–"])
    rows += [[p, name, f"{u:,}", f"{i:,}", f"{n:,}", f"{m:g}", f"{100 * d:.3g}%", "–"]
             for p, name, u, i, n, m, d in PAPER_DATASETS.get(paper, [])]
    return [f"## Testbed `{bed.name}`", "", f"{bed.describe()}.", "",
            markdown_table(["direction / source", "domain", "users", "items", "interactions", "mean length",
                            "density", "test users"], rows), "",
            "Users, interactions and mean length count users with at least one interaction in the domain; the "
            "papers' rows are their datasets as printed (interactions / users and density computed where a paper "
            "prints neither).", ""]


def probe_markdown(probes: dict[str, dict]) -> list[str]:
    """The report's model-free probe (:mod:`privrec.evaluation.transfer_probe`): per direction, how well each
    ranker finds the test users' test item (full ranking), and the paired comparisons over users."""
    from privrec.experiments.report import markdown_table

    if not probes:
        return []
    rows, pairs = [], []
    for where, p in probes.items():
        rows += [[where, name, f"{r['hr@10']:.4f}", f"{r['ndcg@10']:.4f}"] for name, r in p["rankers"].items()]
        pairs += [[where, f"{c['ours']} − {c['theirs']}", f"{c['difference']:+.4f}",
                   "–" if c["p_value"] is None else f"{c['p_value']:.2g}", kept_share(p, c), probe_verdict(p, c)]
                  for c in p["pairs"]]
    users = ", ".join(f"{w}: {p['users']:,}" for w, p in probes.items())
    return ["## Does the auxiliary domain carry transfer? A model-free probe", "",
            "Before any model: each ranker scores every target item for the test users (" + users + "), full "
            "ranking, the user's known target items masked. *popularity*: training counts; *own-domain*: item "
            "co-occurrence over the user's known target items; *through X*: user-kNN (100 neighbours, cosine) "
            "through the source rows X — the raw auxiliary rows, pure noise of their shape, or a release (seed "
            "0's) — each neighbour's target training items weighted by similarity. Through raw ≫ popularity: the "
            "data carries transfer, whatever a model makes of it; through a release against through noise: how "
            "much of it the release keeps.", "",
            markdown_table(["direction", "ranker", "HR@10", "NDCG@10"], rows), "",
            markdown_table(["direction", "paired over users (NDCG@10)", "difference", "p (paired t)",
                            "share of the raw source's lead over noise kept", "verdict (data level)"], pairs), "",
            "The data-level gate passes where the raw source beats both popularity and noise of its shape at "
            f"p < {ALPHA:g}; a release is then judged by its lead over noise: the verdict on what the *release* "
            "keeps, whatever a model makes of it (the model-level gate and claims below say what the paper's model "
            "makes of it).", ""]


def data_gate(probe: dict) -> bool:
    """The probe's own positive control: the raw source ahead of popularity and of noise, p < ALPHA over users."""
    def ahead(a: str, b: str) -> bool:
        c = next((c for c in probe.get("pairs", []) if (c["ours"], c["theirs"]) == (a, b)), None)
        return c is not None and c["difference"] > 0 and c["p_value"] is not None and c["p_value"] < ALPHA

    return ahead("through raw", "popularity") and ahead("through raw", "through noise")


def probe_verdict(probe: dict, pair: dict) -> str:
    """A probe comparison read as a verdict: the data-level gate on the raw source's rows, the release's on
    the others (only where that gate passed)."""
    if pair["ours"] == "through raw":
        return "data-level gate " + ("passed" if data_gate(probe) else "failed")
    if pair["theirs"] != "through noise":
        return "–"
    if not data_gate(probe):
        return "no verdict: the data-level gate failed"
    if pair["p_value"] is not None and pair["p_value"] < ALPHA:
        return "keeps transfer" if pair["difference"] > 0 else "below noise"
    return f"keeps none measurable (p ≥ {ALPHA:g})"


def kept_share(probe: dict, pair: dict) -> str:
    """For a release compared with noise: (release − noise) / (raw − noise) in NDCG@10, the share of the raw
    source's transfer the release keeps ('–' for other comparisons or without a lead to keep)."""
    r = probe["rankers"]
    if pair["theirs"] != "through noise" or pair["ours"] == "through raw" or "through raw" not in r:
        return "–"
    lead = r["through raw"]["ndcg@10"] - r["through noise"]["ndcg@10"]
    return "–" if lead <= 0 else f"{100 * pair['difference'] / lead:.0f}%"


def gate_rows(reports: list[dict]) -> list[dict]:
    """Every gate of several reports, one row each, labelled by the report's testbed."""
    out = []
    for res in reports:
        bed = (res.get("testbed") or {}).get("name", res.get("config", {}).get("testbed", "dense"))
        for g in res.get("gates") or []:
            out.append({"testbed": bed, "where": g["where"], "metric": g["metric"],
                        "positive": paired_cell(g["positive"]), "information": paired_cell(g["information"]),
                        "verdict": g["verdict"], "gate": g})
    return out
