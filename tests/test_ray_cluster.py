"""A grid on a real two-node Ray cluster (a head and a second node, separate ``ray start`` processes on
127.0.0.1), with one worker process killed mid-run: Ray retries the run, it resumes from its last
per-epoch state, and the report equals the one-process report (issue 79)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds Ray's processes in /proc")]

RAY = str(Path(sys.executable).with_name("ray"))
GRID = ["reproduce", "pricdr", "--quick", "--methods", "DMF,PriCDR-SYM", "--no-sweeps"]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pids(match) -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and match(_cmdline(int(p)))]


@pytest.fixture
def cluster(tmp_path_factory):
    """Head + one more node, one CPU each, in their own temp dir (so no other ray.init on this machine
    joins them); stopped by killing exactly their processes (``ray stop`` would stop every Ray here)."""
    temp = tmp_path_factory.mktemp("ray")
    env = {**os.environ, "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"}
    common = ["--num-cpus=1", f"--temp-dir={temp}", "--disable-usage-stats"]
    try:
        subprocess.run([RAY, "start", "--head", "--port=0", "--include-dashboard=false", *common], check=True,
                       env=env, capture_output=True, timeout=180)
        address = (temp / "ray_current_cluster").read_text().strip()
        subprocess.run([RAY, "start", f"--address={address}", *common], check=True, env=env, capture_output=True,
                       timeout=180)
        yield address
    finally:
        _stop(_pids(lambda c: str(temp) in c))


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _stop(roots: list[int]) -> None:
    """The cluster's processes (GCS, raylets, monitors: their command lines name its temp dir) and their
    children (the raylets' agents and workers, whose titles do not), terminated, then killed."""
    mine = set(roots)
    mine |= {int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) in mine}
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        for pid in mine:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while any(_cmdline(p) for p in mine) and time.monotonic() < deadline:
            time.sleep(0.2)


def _tables(out: Path) -> list:
    res = json.loads((out / "results.json").read_text())
    return sorted((r["key"], json.dumps(r["metrics"], sort_keys=True), json.dumps(r["fit"]["history"]))
                  for r in res["runs"])


def test_a_grid_on_a_two_node_cluster_survives_a_killed_worker_and_equals_one_process(cluster, tmp_path):
    out = tmp_path / "ray"
    driver = subprocess.Popen([sys.executable, "-m", "privrec", *GRID, "--ray", cluster, "--out", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"})
    killed = None
    try:
        deadline = time.monotonic() + 600
        while killed is None and driver.poll() is None and time.monotonic() < deadline:
            states = [f.name for f in (tmp_path / "ray.state").glob("*.pt")] if (tmp_path / "ray.state").is_dir() else []
            for pid in _pids(lambda c: c.startswith("ray::") and ("DMF|" in c or "PriCDR-SYM|" in c)):
                key = _cmdline(pid)[len("ray::"):].strip()
                from privrec.experiments.progress import safe_name

                if any(safe_name(key) in s for s in states):    # a run with a saved epoch: kill it
                    os.kill(pid, signal.SIGKILL)
                    killed = key
                    break
            time.sleep(0.2)
        output, _ = driver.communicate(timeout=900)
    finally:
        driver.kill()
    assert killed is not None, "no run was caught with a saved state to kill"
    assert driver.returncode == 0, output[-3000:]
    assert "will be retried" in output and "resuming from" in output, output[-3000:]
    one = tmp_path / "one"
    done = subprocess.run([sys.executable, "-m", "privrec", *GRID, "--jobs", "1", "--out", str(one)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _tables(out) == _tables(one)
