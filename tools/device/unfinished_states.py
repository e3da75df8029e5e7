"""Print the training states under OUT.state/ of runs not recorded as finished in OUT.progress.jsonl
(a finished run that reached its epoch cap keeps its state too; those need not travel back).
    python3 tools/device/unfinished_states.py OUT"""
import json
import sys

from privrec.experiments.runner import progress_path, safe_name, state_dir

out = sys.argv[1]
finished = set()
if progress_path(out).is_file():
    for line in progress_path(out).read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            finished.add(f"{r['fingerprint']}-{safe_name(r['key'])}")
if state_dir(out).is_dir():
    for f in sorted(state_dir(out).iterdir()):
        if f.is_file() and not f.name.startswith(".") and f.stem not in finished:
            print(f)
