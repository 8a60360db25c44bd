"""Start-up cost of the commands that need no server (issue 32): for each command, the modules
loaded, whether Prefect or the Docker SDK is among them, and the CPU (user+sys) of the whole
command, median of N runs, each in a new interpreter.

Usage: .venv/bin/python bench/cli_imports.py [--runs N] [TREE ...]
TREE: checkouts to compare (default: this one), each run with this venv and ``PYTHONPATH=TREE``,
interleaved so that the machine's load hits them alike. A job with two recorded trials is made
with tests/report_fixtures.py (no Docker) for ``report``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {"harnesses": ["harnesses"], "datasets list": ["datasets", "list", "--registry", "{registry}"],
            "report": ["report", "{job}", "--no-write"], "run --help": ["run", "--help"]}
PROBE = ("import json, sys\n"
         "try:  # a checkout before issue 32 left with os._exit: keep it from skipping the print\n"
         "    import flows.local_server.fast_exit as fast\n    fast.exit_now = lambda exc: None\n"
         "except ImportError:\n    pass\n"
         "sys.argv = ['tbflow', *json.loads(sys.argv[1])]\nfrom flows.cli.main import main\n"
         "try:\n    main()\nexcept SystemExit:\n    pass\n"
         "print(json.dumps([len(sys.modules), 'prefect' in sys.modules, 'docker' in sys.modules]), file=sys.stderr)")


def _env(tree: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(tree), TBFLOW_PREFORK="0")  # (a checkout before issue 32: no hand-off)


def _cpu(tree: Path, args: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=tree, env=_env(tree),
                   capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _loaded(tree: Path, args: list[str]) -> list:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=tree,
                          env=_env(tree), capture_output=True, text=True, check=False)
    return json.loads(done.stderr.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("trees", nargs="*", type=Path, default=[ROOT])
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tbflow-cli-imports-"))
    sys.path.insert(0, str(ROOT / "tests"))
    from report_fixtures import make_job, make_trial, write_job_dir

    trials = [make_trial("t1"), make_trial("t2", reward=0.0)]
    fill = {"job": str(write_job_dir(work, make_job(trials), trials)), "registry": str(work / "registry.json")}
    (work / "registry.json").write_text("[]")
    commands = {name: [a.format(**fill) for a in argv] for name, argv in COMMANDS.items()}
    cpu: dict[tuple[str, Path], list[float]] = {}
    for _ in range(args.runs):
        for tree in args.trees:
            for name, argv in commands.items():
                cpu.setdefault((name, tree), []).append(_cpu(tree, argv))
    for name, argv in commands.items():
        for tree in args.trees:
            modules, prefect, docker = _loaded(tree, argv)
            print(f"{name:14s} {str(tree):28s} modules {modules:4d}  prefect {prefect!s:5s}  docker {docker!s:5s}  "
                  f"CPU median {statistics.median(cpu[(name, tree)]):.2f} s")


if __name__ == "__main__":
    main()
