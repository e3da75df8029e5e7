#!/bin/bash
# Prepare the folder a lent GPU machine needs to run privrec experiments (run here, in the repo root):
# the cached datasets (gzipped) and wheels of the locked packages that machine's image lacks.
#   tools/device/prepare.sh [DATASET ...]        (default: ml-1m)
# Then, through the device tool: carry [".device"], command `bash tools/device/run.sh '<privrec args>' ...`.
# .device/ is ignored by git (it is data, not source); see the README's "Long runs" paragraph.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
out=.device
mkdir -p "$out/datasets" "$out/wheels"
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
