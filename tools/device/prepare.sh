#!/bin/bash
# Prepare the folder a lent GPU machine needs to run privrec experiments (run here, in the repo root):
# the cached datasets (gzipped) and wheels of the locked packages that machine's image lacks.
#   tools/device/prepare.sh [--file PATH[:DEST] ...] [DATASET ...]        (default dataset: ml-1m)
# --file packs PATH (a file, or every file of a folder) xz-compressed into .device/files/DEST (default: PATH), which
# run.sh restores at DEST there: e.g. a published release the runs should read rather than rebuild.
# Then, through the device tool: carry [".device"], command `bash tools/device/run.sh '<privrec args>' ...`.
# .device/ is ignored by git (it is data, not source); see the README's "Long runs" paragraph.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
out=.device
mkdir -p "$out/datasets" "$out/wheels"
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --file)
      [ $# -ge 2 ] || { echo "prepare.sh: --file needs PATH[:DEST]" >&2; exit 2; }
      from=${2%%:*}; to=${2#*:}; [ "$to" = "$2" ] && to=$from
      [ -e "$from" ] || { echo "prepare.sh: --file $from does not exist" >&2; exit 2; }
      find "$from" -type f | while IFS= read -r f; do
        dest="$out/files/$to${f#"$from"}.xz"; mkdir -p "$(dirname "$dest")"
        xz -T2 -6 -c "$f" > "$dest"
      done
      shift 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
set -- "${names[@]}"
cache=${PRIVREC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/privrec}
for name in "${@:-ml-1m}"; do
  src="$cache/datasets/$name"
  [ -f "$src/manifest.json" ] || .venv/bin/privrec datasets fetch "$name"
  mkdir -p "$out/datasets/$name"
  cp "$src/manifest.json" "$out/datasets/$name/"
  for f in "$src"/*; do
    case "$f" in *manifest.json) ;; *) gzip -c "$f" > "$out/datasets/$name/$(basename "$f").gz" ;; esac
  done
done
# the packages privrec needs that the image (Python 3.12, torch, numpy, pandas, numba, ...) does not ship,
# at the versions of requirements/lock.txt, for the image's Python (PY, default 3.12)
pins=$(grep -E '^(opacus|dp-accounting|dm-tree)==' requirements/lock.txt | sed 's/ .*//')
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version "${PY:-3.12}" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$out/wheels" $pins
du -sh "$out"
