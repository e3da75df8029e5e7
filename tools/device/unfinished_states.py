"""Print what OUT.state/ holds for runs not recorded as finished in OUT.progress.jsonl, one path a line
(tools/device/run.sh brings these back; a finished run that reached its cap keeps its state, left out).
    python3 tools/device/unfinished_states.py OUT"""
import sys

from privrec.experiments.runner import unfinished_states

for path in unfinished_states(sys.argv[1]):
    print(path)
