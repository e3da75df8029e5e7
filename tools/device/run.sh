#!/bin/bash
# Run privrec commands in parallel on a lent GPU machine (its python3 holds CUDA PyTorch), from the repo
# root that the device tool sent, with the folder tools/device/prepare.sh made carried along:
#   T=480 bash tools/device/run.sh 'reproduce dipsgnn --out results/x-s1 --seeds 1' 'reproduce …' …
# Each command runs under `timeout $T` (default 480 s) with --device auto (CUDA); every run saves its state
# after each epoch and its record when it ends, so a command cut by the timeout keeps its finished runs.
# Files under .device/files/ are copied to the same path in the repo first (.xz and .gz ones decompressed):
# e.g. a published release a run should read rather than rebuild (prepare.sh --file PATH puts it there).
# Back in $OUT (the tool returns at most 8 files of at most 16 MB): logs.tar (one log per command),
# results.tar (each --out folder and its OUT.progress.jsonl) and states-<k>.tar (the OUT.state/ files of
# unfinished runs only, packed into parts of at most 15 MB; at most 6 parts). Unpack here with `tar xf`, then
# merge: see the README's "Long runs".
set -uo pipefail
src=.device
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$src"/wheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PRIVREC_CACHE=/tmp/privrec-cache PYTHONUNBUFFERED=1
for d in "$src"/datasets/*/; do
  name=$(basename "$d"); mkdir -p "$PRIVREC_CACHE/datasets/$name"
  cp "$d/manifest.json" "$PRIVREC_CACHE/datasets/$name/"
  for f in "$d"/*.gz; do gunzip -c "$f" > "$PRIVREC_CACHE/datasets/$name/$(basename "$f" .gz)"; done
done
if [ -d "$src/files" ]; then
  python3 - "$src/files" <<'EOF' || exit 1
import gzip, lzma, pathlib, shutil, sys
root = pathlib.Path(sys.argv[1])
for f in sorted(p for p in root.rglob("*") if p.is_file()):
    rel = f.relative_to(root)
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(f.suffix)
    dest = rel.with_suffix("") if opener else rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    with (opener or open)(f, "rb") as a, open(dest, "wb") as b:
        shutil.copyfileobj(a, b)
    print("unpacked", dest)
EOF
fi
nvidia-smi -L
T=${T:-480}; i=0; outs=(); cmds=("$@"); mkdir -p /tmp/logs
for cmd in "$@"; do
  # shellcheck disable=SC2086
  timeout "$T" python3 -m privrec $cmd > "/tmp/logs/log$i" 2>&1 &
  o=$(sed -n 's/.*--out[ =]\([^ ]*\).*/\1/p' <<< "$cmd"); [ -n "$o" ] && outs+=("$o")
  i=$((i + 1))
done
wait
sleep 5                                            # spawned workers end with their parent
results=(); states=()
for o in "${outs[@]}"; do
  for p in "$o" "$o.progress.jsonl"; do [ -e "$p" ] && results+=("$p"); done
  while IFS= read -r f; do states+=("$f"); done < <(python3 tools/device/unfinished_states.py "$o")
done
[ ${#results[@]} -gt 0 ] && tar cf "$OUT/results.tar" "${results[@]}"
tar cf "$OUT/logs.tar" -C /tmp logs
part=0; size=0; batch=(); left=()
flush() {
  if [ ${#batch[@]} -gt 0 ]; then
    if [ $part -lt 6 ]; then tar cf "$OUT/states-$part.tar" "${batch[@]}"; part=$((part + 1)); else left+=("${batch[@]}"); fi
  fi
  batch=(); size=0
}
for f in "${states[@]}"; do
  s=$(du -sb "$f" | cut -f1)
  [ $((size + s)) -gt 15000000 ] && flush
  batch+=("$f"); size=$((size + s))
done
flush
[ ${#left[@]} -gt 0 ] && echo "warning: states beyond 6 parts of 15 MB stayed behind: ${left[*]}"
for ((j = 0; j < i; j++)); do
  echo "== $j: ${cmds[$j]}"; tr '\r' '\n' < "/tmp/logs/log$j" | grep -a "best epoch\|error\|Error\|report:\|\] epoch" | tail -14
done
ls -la "$OUT"
