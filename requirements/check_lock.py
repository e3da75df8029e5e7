"""Is ``requirements/lock.txt`` in sync with ``pyproject.toml``? (run by ``make`` and CI)

Two checks, both offline:

1. *Inputs unchanged* (standard library only, run before anything is installed): the lock's
   header records a SHA-256 of everything it was resolved from — ``pyproject.toml``'s
   ``[project]`` dependencies, extras and Python range, ``[build-system]`` requirements, and the
   files ``requirements/build.in`` and ``requirements/constraints.txt``. Any change there means
   the lock may no longer describe what the package asks for: run ``make lock``.
2. *Every requirement satisfied* (``--installed``, after the install, needs ``packaging``): each
   requirement of pyproject (all extras) is met by the version the lock pins, so a hand-edited
   lock that drifted from the ranges is caught too.

Exit status 0 when in sync; 1 with a one-line reason and the fix otherwise.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"
INPUT_FILES = ("requirements/build.in", "requirements/constraints.txt")
MARK = "# inputs-sha256: "
TARGET = "CPython 3.11 on Linux x86_64"      # what the lock is resolved for (the CI machine)


def inputs_digest(root: Path = ROOT) -> str:
    """SHA-256 over the parts of pyproject.toml and the files the lock is resolved from."""
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    project = meta.get("project", {})
    spec = {"dependencies": project.get("dependencies", []),
            "optional-dependencies": project.get("optional-dependencies", {}),
            "requires-python": project.get("requires-python"),
            "build-system": meta.get("build-system", {}).get("requires", [])}
    h = hashlib.sha256(json.dumps(spec, sort_keys=True).encode())
    for name in INPUT_FILES:
        h.update(name.encode() + b"\0" + (root / name).read_bytes())
    return h.hexdigest()


def recorded_digest(lock: Path = LOCK) -> str | None:
    for line in lock.read_text().splitlines():
        if line.startswith(MARK):
            return line[len(MARK):].strip()
    return None


def pins(lock: Path = LOCK) -> dict[str, str]:
    """{normalised name: version} of every ``name==version`` line of the lock."""
    out = {}
    for line in lock.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s\\;]+)", line)
        if m:
            out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return out


def unsatisfied(root: Path = ROOT, lock: Path = LOCK) -> list[str]:
    """pyproject requirements (all extras) that the lock's pins do not meet."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    reqs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    pinned = pins(lock)
    bad = []
    for text in reqs:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        version = pinned.get(canonicalize_name(req.name))
        if version is None:
            bad.append(f"{text} (not in the lock)")
        elif not req.specifier.contains(Version(version), prereleases=True):
            bad.append(f"{text} (lock pins {version})")
    return bad


def main(argv: list[str]) -> int:
    if not LOCK.is_file():
        print(f"error: {LOCK.relative_to(ROOT)} is missing; run `make lock`", file=sys.stderr)
        return 1
    recorded, current = recorded_digest(), inputs_digest()
    if recorded != current:
        print(f"error: {LOCK.relative_to(ROOT)} is out of date: pyproject.toml's dependencies or "
              f"{', '.join(INPUT_FILES)} changed since it was resolved; run `make lock` and commit the new lock "
              f"(recorded {str(recorded)[:12]}, now {current[:12]})", file=sys.stderr)
        return 1
    if "--installed" in argv:
        bad = unsatisfied()
        if bad:
            print("error: the lock does not satisfy pyproject.toml: " + "; ".join(bad) + ". Run `make lock`.",
                  file=sys.stderr)
            return 1
    here = f"{platform.python_implementation()} {platform.python_version()} on {platform.system()} {platform.machine()}"
    if not (sys.version_info[:2] == (3, 11) and platform.system() == "Linux" and platform.machine() == "x86_64"):
        print(f"warning: the lock is resolved for {TARGET}; this is {here}. If the install fails, "
              "install from the ranges instead: pip install -e '.[all]' (see README)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
