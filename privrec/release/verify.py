"""A certificate is believed only where its guarantee follows from its own parameters.

:func:`~privrec.release.folder.read_release` hashes the data files against the certificate; this
module checks the certificate itself: the guarantee is recomputed from the mechanism and the
parameters it records, through the same accountant that issued it, and every stated epsilon and
delta (the headline, the related units, the one-line summary) must agree with the recomputation.
An edited ``guarantee.epsilon`` (0.00703 → 1e-9), an edited summary, or parameters that no longer
give the stated numbers are refused, naming the field.

What this cannot do: a certificate is a statement, not a signature. Someone who edits the
parameters *and* recomputes every number with privrec's own accountant has written a consistent
certificate for a release that was not made that way; the facts a reader can check against the data
(the matrix's shape, the domain's size: :func:`check_domain_facts`) narrow that down, a signature
(not provided) would close it.
"""

from __future__ import annotations

from pathlib import Path

from privrec.errors import ParameterError, ReleaseError
from privrec.privacy.guarantee import close as _close
from privrec.privacy.guarantee import number as _num
from privrec.privacy.registry import certified_names, certifier


def check_certificate(cert: dict, folder: str | Path) -> None:
    """Refuse a certificate whose guarantee does not follow from its recorded mechanism and parameters."""
    where = f"{folder}/certificate.json"
    g = cert.get("guarantee")
    if not isinstance(g, dict) or not isinstance(g.get("parameters"), dict) or not isinstance(g.get("mechanism"), str):
        raise ReleaseError(f"{where} has no readable guarantee (mechanism, epsilon, parameters); a release without "
                           "one is refused: publish again")
    name = g["mechanism"]
    if cert.get("mechanism") not in (None, name):
        raise ReleaseError(f"{where}: the certificate names mechanism {cert.get('mechanism')!r} but its guarantee "
                           f"{name!r}; it was edited: publish again")
    entry = certifier(name)
    if entry is not None and entry.recompute is not None:
        try:
            true = entry.recompute(g["parameters"]).to_dict()
        except (KeyError, TypeError, ValueError, ParameterError) as exc:
            raise ReleaseError(f"{where}: the guarantee's parameters do not describe a {name} release ({exc}); "
                               "publish again") from None
        problems = _differences(g, true, "guarantee")
        problems += _summary_problems(cert.get("summary"), true)
    elif entry is not None and entry.consistent is not None:
        problems = entry.consistent(g)
    else:
        raise ReleaseError(f"{where}: unknown mechanism {name!r}; privrec reads releases of "
                           f"{', '.join(certified_names())}")
    if problems:
        raise ReleaseError(f"{where} does not hold: {problems[0]}" + (f" (and {len(problems) - 1} more)"
                           if len(problems) > 1 else "") + "; the certificate was edited after it was issued: "
                           "publish again, and never believe its numbers")


def check_domain_facts(cert: dict, folder: str | Path, *, domain: str, n_items: int, n_users: int | None = None) -> None:
    """What a certificate says about its data, against the data: the certified domain's item count (the
    guarantee was computed for it) and the users it was published for."""
    where = f"{folder}/certificate.json"
    inp = cert.get("input") if isinstance(cert.get("input"), dict) else {}
    stated = inp.get("items", (cert.get("guarantee") or {}).get("parameters", {}).get("n_items"))
    if stated is not None and int(stated) != int(n_items):
        raise ReleaseError(f"{where} claims domain {domain!r}, which has {n_items:,} items, but it was issued for "
                           f"{int(stated):,} items: it does not describe this domain (edited, or another domain's "
                           "release); publish again")
    users = inp.get("users", inp.get("rows"))
    if n_users is not None and users is not None and int(users) != int(n_users):
        raise ReleaseError(f"{where} was issued for {int(users):,} users, the data has {n_users:,} shared users; "
                           "publish again from this data")


def _differences(stated: dict, true: dict, path: str) -> list[str]:
    out = []
    for key in ("epsilon", "delta"):
        if not _close(stated.get(key), true.get(key)):
            out.append(f"{path}.{key} is {stated.get(key)!r}, its parameters give {true.get(key)!r}")
    for key in ("definition", "unit_of_privacy"):
        if stated.get(key) != true.get(key):
            out.append(f"{path}.{key} is not what the mechanism guarantees ({true.get(key)!r})")
    related_s, related_t = stated.get("related") or [], true.get("related") or []
    if len(related_s) != len(related_t):
        out.append(f"{path}.related lists {len(related_s)} guarantees, the mechanism gives {len(related_t)}")
    else:
        for i, (s, t) in enumerate(zip(related_s, related_t)):
            out += _differences(s if isinstance(s, dict) else {}, t, f"{path}.related[{i}]")
    return out


def _summary_problems(summary, true: dict) -> list[str]:
    from privrec.privacy.guarantee import _fmt

    want = f"epsilon={_fmt(_num(true['epsilon']))}"
    if not isinstance(summary, str) or want not in summary:
        return [f"the summary does not state the guarantee's {want}"]
    return []

