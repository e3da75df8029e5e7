#!/bin/bash
# Run privrec commands in parallel on a lent GPU machine (its python3 holds CUDA PyTorch), from the repo
# root that the device tool sent, with the folder tools/device/prepare.sh made carried along:
#   T=480 bash tools/device/run.sh 'reproduce dipsgnn --out results/x-s1 --seeds 1' 'reproduce …' …
# Each command runs under `timeout $T` (default 480 s) with --device auto (CUDA); every run saves its state
# after each epoch and its record when it ends, so a command cut by the timeout keeps its finished runs.
# Back in $OUT: log<i> per command, results.tar with each --out folder and its OUT.progress.jsonl, and
# states.tar with the OUT.state/ folders of unfinished runs (apart: the tool returns files up to 16 MB,
# and states are the large part). Unpack here with `tar xf`, then merge: see the README's "Long runs".
set -uo pipefail
src=.device
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$src"/wheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PRIVREC_CACHE=/tmp/privrec-cache PYTHONUNBUFFERED=1
for d in "$src"/datasets/*/; do
  name=$(basename "$d"); mkdir -p "$PRIVREC_CACHE/datasets/$name"
  cp "$d/manifest.json" "$PRIVREC_CACHE/datasets/$name/"
  for f in "$d"/*.gz; do gunzip -c "$f" > "$PRIVREC_CACHE/datasets/$name/$(basename "$f" .gz)"; done
done
nvidia-smi -L
T=${T:-480}; i=0; outs=(); cmds=("$@")
for cmd in "$@"; do
  # shellcheck disable=SC2086
  timeout "$T" python3 -m privrec $cmd > "$OUT/log$i" 2>&1 &
  o=$(sed -n 's/.*--out[ =]\([^ ]*\).*/\1/p' <<< "$cmd"); [ -n "$o" ] && outs+=("$o")
  i=$((i + 1))
done
wait
results=(); states=()
for o in "${outs[@]}"; do
  for p in "$o" "$o.progress.jsonl"; do [ -e "$p" ] && results+=("$p"); done
  [ -d "$o.state" ] && states+=("$o.state")
done
[ ${#results[@]} -gt 0 ] && tar cf "$OUT/results.tar" "${results[@]}"
[ ${#states[@]} -gt 0 ] && tar cf "$OUT/states.tar" "${states[@]}"
for ((j = 0; j < i; j++)); do
  echo "== $j: ${cmds[$j]}"; tr '\r' '\n' < "$OUT/log$j" | grep -a "best epoch\|error\|Error\|report:" | tail -12
done
ls -la "$OUT"
