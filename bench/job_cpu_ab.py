"""CPU of a whole job per trial (cgroup: the command, its Prefect server and their children), code
trees side by side, interleaved in one session (issue 28).

This machine's speed drifts by 20 % and more within an hour (a shared host), so a number from
another session says little: the same 445-trial job (89 trivial tasks x 5, concurrency 4, images
built by a warm-up job) runs from each tree in turn, with the same dataset and PREFECT_HOME.

Usage: .venv/bin/python bench/job_cpu_ab.py TREE[,TREE...] [--rounds 2] [--tasks 89]
  TREE: a checkout (e.g. ``git worktree add /tmp/old COMMIT``); this venv runs each, with
  ``PYTHONPATH`` and the working directory on it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from judge_cost import CGROUP, dataset  # noqa: E402


def run(tree: str, ds: Path, work: Path, name: str, cgroup: Path | None = None) -> float:
    env = dict(os.environ, PREFECT_HOME=str(work / "prefect-home"), PYTHONPATH=tree)
    env.pop("PREFECT_API_URL", None)

    def enter() -> None:
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "flows.cli", "run", str(ds), "--jobs-dir", str(work / "jobs"),
                           "--job-name", name, "--attempts", "5", "--concurrency", "4"],
                          cwd=tree, env=env, capture_output=True, text=True, preexec_fn=enter)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: tbflow failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - t


def measured(tree: str, ds: Path, work: Path, name: str) -> tuple[float, float]:
    cgroup = CGROUP / f"tbflow-ab-{os.getpid()}"
    cgroup.mkdir()
    try:
        wall = run(tree, ds, work, name, cgroup)
        return wall, int((cgroup / "cpuacct.usage").read_text()) / 1e9
    finally:
        for pid in (cgroup / "cgroup.procs").read_text().split():  # only what this bench started
            subprocess.run(["kill", pid], capture_output=True)
        while (cgroup / "cgroup.procs").read_text().strip():
            time.sleep(0.05)
        cgroup.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trees")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tasks", type=int, default=89)
    args = ap.parse_args()
    trees = args.trees.split(",")
    work = Path(tempfile.mkdtemp(prefix="tbflow-job-cpu-ab-"))
    ds = dataset(work / "ds", args.tasks)
    run(trees[0], ds, work, "warm-up")
    for i in range(args.rounds):
        for tree in trees:
            wall, cpu = measured(tree, ds, work, f"{Path(tree).name}-{i}")
            print(json.dumps({"tree": tree, "round": i, "wall_s": round(wall, 1),
                              "cpu_per_trial_s": round(cpu / (args.tasks * 5), 4)}), flush=True)


if __name__ == "__main__":
    main()
