"""Peak memory of tbflow while an agent floods its stdout, next to a quiet trial.

Two measurements:

1. **A whole job** (``tbflow run`` in a subprocess, oracle harness): one trial whose agent writes
   ``--flood-mb`` MiB to stdout (default 1024) and one quiet trial, each as its own job. The peak
   RSS of the tbflow process, and of its whole process tree (Prefect's local server included), is
   sampled every 50 ms from ``/proc``. The flood travels the real path: the container's
   ``/logs/agent``, the one ``/logs`` download, the job dir, the reports.
2. **The model harnesses' log parsing**: a model CLI's stdout is its JSON event log, which tbflow
   reads for token usage and the failure line. The parser (codex's) runs in a fresh process on a
   flooded event log (``--flood-mb`` of junk lines, one 64 MiB line, usage events around them)
   and on a quiet one; each process's peak RSS (``ru_maxrss``) is reported.

    PREFECT_HOME=$(mktemp -d) .venv/bin/python bench/flood_memory.py [--flood-mb 1024]

Needs the Docker engine and the base image; writes ~3x ``--flood-mb`` to a temporary dir on disk
(the container's layer, the download spool, the job dir) and removes it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _tree_rss(pid: int) -> tuple[int, int]:
    """(RSS of ``pid``, RSS of ``pid`` and all its descendants), in KiB."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                stat = fh.read()
            fields = stat[stat.rfind(")") + 2:].split()
            children.setdefault(int(fields[1]), []).append(int(d))
            rss[int(d)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, []))
    return rss.get(pid, 0), total


def run_job(ds: Path, task: str, jobs: Path) -> dict:
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli.main", "run", str(ds), "--include", task,
                             "--jobs-dir", str(jobs), "--job-name", task], cwd=ROOT,
                            env={k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"},  # its server in the tree
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak_main = peak_tree = 0
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    start = time.monotonic()
    while proc.poll() is None:
        main, tree = _tree_rss(proc.pid)
        peak_main, peak_tree = max(peak_main, main), max(peak_tree, tree)
        time.sleep(0.05)
    reader.join()
    rec = json.loads((jobs / task / "trials" / f"{task}.oracle.1" / "trial.json").read_text())
    log = jobs / task / "trials" / f"{task}.oracle.1" / "agent" / "oracle.txt"
    return dict(task=task, exit=proc.returncode, wall_sec=round(time.monotonic() - start, 1),
                validity=rec["validity"]["status"], agent_log_mb=round(log.stat().st_size / 2**20, 1),
                peak_rss_tbflow_mb=round(peak_main / 1024, 1), peak_rss_tree_mb=round(peak_tree / 1024, 1))


_PARSE = """
import resource, sys, time
from pathlib import Path
from harnesses.registry import get_harness
h = get_harness("codex")
start = time.monotonic()
u = h.parse_usage(Path(sys.argv[1]))
h.error_line(Path(sys.argv[1]))
print(u.total_tokens if u else None, round(time.monotonic() - start, 2),
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def parse_in_process(tmp: Path, flood_mb: int) -> list[dict]:
    """Parse a quiet and a flooded codex event log, each in a fresh process; its peak RSS."""
    from harnesses.registry import get_harness

    name = get_harness("codex").stdout_name
    usage = json.dumps({"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 5}}).encode()
    junk = (b"x" * 1023 + b"\n") * 1024
    rows = []
    for kind in ("quiet", "flood"):
        log = tmp / kind / name
        log.parent.mkdir(parents=True)
        with open(log, "wb") as fh:
            fh.write(usage + b"\n")
            if kind == "flood":
                fh.write(b"{")
                for _ in range(64):  # one over-long line of 64 MiB
                    fh.write(b"y" * 2**20)
                fh.write(b"\n")
                for _ in range(flood_mb):
                    fh.write(junk)
                fh.write(usage + b"\n")
        res = subprocess.run([sys.executable, "-c", _PARSE, str(log.parent)], cwd=ROOT, capture_output=True,
                             text=True, check=True)
        tokens, sec, maxrss = res.stdout.split()
        rows.append(dict(log=kind, log_mb=round(log.stat().st_size / 2**20, 1), tokens=tokens, sec=float(sec),
                         peak_rss_mb=round(int(maxrss) / 1024, 1)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flood-mb", type=int, default=1024)
    ap.add_argument("--skip-job", action="store_true", help="only the in-process parsing measurement")
    args = ap.parse_args()
    from task_factory import make_task

    tmp = Path(tempfile.mkdtemp(prefix="tbflow-flood-"))
    try:
        print(json.dumps({"parse": parse_in_process(tmp / "parse", args.flood_mb)}, indent=1), flush=True)
        if args.skip_job:
            return
        ds = tmp / "ds"
        flood = textwrap.dedent(f"""\
            head -c {args.flood_mb}M /dev/zero | tr '\\0' 'x' | fold -w 1023
            echo done > /app/done
            """)
        make_task(ds, "flood", solve=flood, check="[ -f /app/done ]", agent_timeout=900)
        make_task(ds, "quiet", solve="echo done > /app/done\n", check="[ -f /app/done ]")
        rows = [run_job(ds, t, tmp / "jobs") for t in ("quiet", "flood")]
        print(json.dumps({"job": rows}, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
