"""Cold start of a whole ``tbflow run`` against the Docker floor for the same trials (issue 11).

cold-start ratio = wall time of ``tbflow run`` of three trivial tasks (oracle, images already
built, concurrency 1) as a new process / the Docker floor for the same three trials (per trial
``docker run -d --init``, two ``docker exec``, ``docker rm -f``, sequentially; CLI, as in
bench/trial_overhead.py). Also reported per run: when the first trial started (its record's
``started_at``) and when the command returned, both from the command's start.

Modes (PREFECT_HOME persistent and used once before, so its SQLite database exists and is migrated):
  per-command no PREFECT_API_URL (the default): a server of the command's own, stopped with it
  configured  PREFECT_API_URL points at a running server (``tbflow server start``, before the runs;
              the way to reuse one server across commands, docs/local-server.md)

Usage: .venv/bin/python bench/cold_start.py [--runs N] [--mode per-command|configured|all]
                                            [--concurrency N] [--phases]
Target: ratio <= 3.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from trial_overhead import floor_cli, make_task  # noqa: E402

IMAGE = "tbflow/base:bookworm"


def timed_run(dataset: Path, jobs: Path, env: dict, concurrency: int = 1) -> dict:
    start_wall = time.time()
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "flows.cli", "run", str(dataset), "--jobs-dir", str(jobs),
                           "--concurrency", str(concurrency)], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"tbflow failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    records = [json.loads(p.read_text()) for p in jobs.glob("*/trials/*/trial.json")]
    first = min(datetime.fromisoformat(r["started_at"]).timestamp() for r in records)
    return {"wall_sec": round(wall, 2), "first_trial_at_sec": round(first - start_wall, 2), "trials": len(records)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mode", choices=[*MODES, "all"], default="all")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--phases", action="store_true", help="also time the start-up pieces one by one")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tbflow-cold-"))
    ds = work / "ds"
    for name in ("t1", "t2", "t3"):
        make_task(ds, name, solve="echo ok > /app/done\n", check="[ -f /app/done ]")
    env = dict(os.environ, PREFECT_HOME=str(work / "prefect-home"))
    env.pop("PREFECT_API_URL", None)
    t = time.perf_counter()
    timed_run(ds, work / "warm-up", env)  # builds the image, creates and migrates the database
    print(f"warm-up (fresh PREFECT_HOME, image build): {time.perf_counter() - t:.2f} s")
    if args.phases:
        print(json.dumps(phases(ds, work, env), indent=1))
    out: dict = {}
    modes = MODES if args.mode == "all" else [args.mode]
    for mode in modes:
        run_env = dict(env)
        if mode == "configured":
            _start_configured_server(run_env)
        try:
            out[mode] = [timed_run(ds, work / f"{mode}-{i}", run_env, args.concurrency) for i in range(args.runs)]
        finally:
            if mode == "configured":
                _cli(["server", "stop"], run_env)
    floors = [sum(floor_cli(IMAGE, 3)) for _ in range(args.runs)]
    floor = statistics.median(floors)
    print(f"concurrency {args.concurrency}")
    print(json.dumps({"floor_3_trials_sec": [round(f, 2) for f in floors], **out}, indent=1))
    for mode, runs in out.items():
        wall = statistics.median(r["wall_sec"] for r in runs)
        first = statistics.median(r["first_trial_at_sec"] for r in runs)
        print(f"{mode}: wall median {wall:.2f} s, first trial started at {first:.2f} s, floor {floor:.2f} s, "
              f"cold-start ratio {wall / floor:.2f}")


MODES = ["per-command", "configured"]


def _cli(args: list[str], env: dict) -> str:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=True).stdout


PHASES = {
    # each piece alone, in a new process, as the CLI runs it (seconds, wall)
    "python + CLI imports": "import flows.cli.main",
    "plan + Docker preflight (after imports)": (
        "import flows.cli.main, time; from flows.job.job_config import JobConfig; from flows.job.job_plan import plan;"
        "from tasks_lib.container.docker_client import preflight; t = time.perf_counter();"
        "plan(JobConfig(dataset=%(ds)r, jobs_dir=%(jobs)r), 'x' * 12); preflight();"
        "print('INNER', time.perf_counter() - t)"),
    "import prefect + the job flow": "import flows.job_flow",
    "server start until /health answers": (
        "from flows.local_server.prefect_settings import configure_embedded_prefect; configure_embedded_prefect();"
        "import time; from flows.local_server import command_server; t = time.perf_counter(); s = command_server.start();"
        "s.wait_ready(); print('INNER', time.perf_counter() - t); s.stop()"),
}


def phases(ds: Path, work: Path, env: dict) -> dict:
    out = {}
    for name, code in PHASES.items():
        code = code % {"ds": str(ds), "jobs": str(work / "phase-jobs")} if "%(" in code else code
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                              check=True)
        wall = time.perf_counter() - t
        inner = [ln.split()[1] for ln in done.stdout.splitlines() if ln.startswith("INNER")]
        out[name] = round(float(inner[0]) if inner else wall, 2)
    return out


def _start_configured_server(env: dict) -> None:
    """A running Prefect server, as a user starts it (``tbflow server start``), for the runs."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env["PREFECT_API_URL"] = _cli(["server", "start", "--port", str(port)], env).strip().split("=", 1)[1]


if __name__ == "__main__":
    main()
