"""Run every benchmark script in this folder and print their tables."""

import pathlib
import subprocess
import sys

here = pathlib.Path(__file__).parent
for script in sorted(here.glob("bench_*.py")):
    print(f"\n## {script.stem}\n", flush=True)
    subprocess.run([sys.executable, str(script), *sys.argv[1:]], check=True)
