"""Makespan of a job of mixed task lengths against its lower bound, and tbflow's peak memory.

makespan ratio = job wall time / max(longest trial, sum of trial durations / concurrency), all
from one job's own records: the job's wall time is ``job.json``'s ``started_at`` → ``ended_at``
(the trials, not Prefect's server start-up nor the report), the trial durations are their
``duration_sec``. Target (issue 11): ≤ 1.10 with ``--order expected``.

Dataset: the four example tasks plus generated tasks whose ``solve.sh`` sleeps a known time,
named so that the longest sorts last (as in the issue's measurement). Every job runs through the
``tbflow`` CLI as a user runs it, with the oracle, after a warm-up job (nop) that builds the
images. Per concurrency (2, 4), three jobs:

- ``name``: ``--order name``, the old behaviour (its trials also give the history);
- ``expected-metadata``: ``--order expected`` with an empty history: the generated tasks carry
  ``estimated_duration_sec`` (their sleep), the example tasks have no estimate (agent timeout);
- ``expected-history``: ``--order expected`` with the history of the earlier jobs.

While each job runs, the resident memory of the ``tbflow`` process and all its descendants (the
embedded Prefect server) is sampled every 0.2 s from ``/proc``; the peak is reported, and per
trial in flight (peak / concurrency).

Usage: .venv/bin/python bench/makespan.py [--sleeps 24,12,8,6,4,2] [--concurrency 2,4]
                                          [--out bench/out/makespan.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from task_factory import make_task  # noqa: E402

TBFLOW = ROOT / ".venv" / "bin" / "tbflow"


def make_dataset(ds: Path, sleeps: list[int]) -> None:
    for task in sorted((ROOT / "examples" / "tasks").iterdir()):
        shutil.copytree(task, ds / task.name)
    for sec in sleeps:
        make_task(ds, f"sleep-{sec:03d}", solve=f"sleep {sec}\ntouch /tmp/slept\n", check="[ -f /tmp/slept ]",
                  extra_toml=f"\n[metadata]\nestimated_duration_sec = {sec}\n", agent_timeout=sec + 60)


def _tree_rss_kb(root_pid: int) -> int:
    """RSS of ``root_pid`` and every descendant (from /proc), in KiB."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def run_job(ds: Path, jobs: Path, name: str, harness: str, order: str, concurrency: int, env: dict) -> dict:
    proc = subprocess.Popen([str(TBFLOW), "run", str(ds), "-a", harness, "--order", order, "-n", str(concurrency),
                             "--jobs-dir", str(jobs), "--job-name", name], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"job {name} failed ({proc.returncode}):\n{out}")
    job = json.loads((jobs / name / "job.json").read_text())
    records = [json.loads(p.read_text()) for p in sorted((jobs / name / "trials").glob("*/trial.json"))]
    return {"job": job, "records": records, "peak_rss_kb": peak[0]}


def _ts(s: str) -> float:
    return datetime.fromisoformat(s).timestamp()


def makespan(run: dict, concurrency: int) -> dict:
    job, records = run["job"], run["records"]
    durations = [r["duration_sec"] for r in records]
    bound = max(max(durations), sum(durations) / concurrency)
    wall = _ts(job["ended_at"]) - _ts(job["started_at"])
    span = max(_ts(r["ended_at"]) for r in records) - min(_ts(r["started_at"]) for r in records)
    first = sorted(records, key=lambda r: r["started_at"])
    longest = max(records, key=lambda r: r["duration_sec"])
    return {
        "order": job["order"]["mode"], "trials": len(records),
        "verdicts": sorted({(r["validity"]["status"], r["validity"]["reward"]) for r in records}),
        "job_wall_sec": round(wall, 1), "trials_span_sec": round(span, 1),
        "longest_trial_sec": round(max(durations), 1),
        "sum_over_concurrency_sec": round(sum(durations) / concurrency, 1),
        "lower_bound_sec": round(bound, 1), "makespan_ratio": round(wall / bound, 3),
        # slot time between trials' records (Prefect task-run start/finish, dispatch), per trial
        "slot_idle_sec_per_trial": round((span * concurrency - sum(durations)) / len(records), 2),
        "longest_trial": longest["spec"]["trial_id"],
        "longest_started_at_sec": round(_ts(longest["started_at"]) - _ts(job["started_at"]), 1),
        "start_order": [r["spec"]["trial_id"] for r in first],
        "expected_sources": sorted({q["source"] for q in job["order"]["trials"]}),
        "peak_rss_mb": round(run["peak_rss_kb"] / 1024, 1),
        "peak_rss_mb_per_trial_in_flight": round(run["peak_rss_kb"] / 1024 / concurrency, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleeps", default="24,12,8,6,4,2")
    ap.add_argument("--concurrency", default="2,4")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "makespan.json"))
    args = ap.parse_args()
    sleeps = [int(x) for x in args.sleeps.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="tbflow-bench-makespan-") as tmp:
        ds, jobs = Path(tmp) / "ds", Path(tmp) / "jobs"
        make_dataset(ds, sleeps)
        # a server per command (no PREFECT_API_URL), so the sampled process tree holds it:
        # the peak RSS is tbflow's with its server (the makespan excludes the server's start)
        env = dict(os.environ, PREFECT_HOME=str(Path(tmp) / "prefect"),
                   TBFLOW_HISTORY=str(Path(tmp) / "history.sqlite"))
        run_job(ds, jobs, "warmup", "nop", "name", 4, env)  # builds every image
        for conc in (int(x) for x in args.concurrency.split(",")):
            fresh = dict(env, TBFLOW_HISTORY=str(Path(tmp) / f"empty-history-{conc}.sqlite"))
            for label, order, job_env in (("name", "name", env), ("expected-metadata", "expected", fresh),
                                          ("expected-history", "expected", env)):
                row = makespan(run_job(ds, jobs, f"{label}-c{conc}", "oracle", order, conc, job_env), conc)
                row.update(concurrency=conc, job=label)
                results.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "start_order"}), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    print(f"{'concurrency':>11} {'job':>18} {'wall':>6} {'bound':>6} {'ratio':>6} {'peak RSS MB':>11} {'/trial':>7}")
    for r in results:
        print(f"{r['concurrency']:>11} {r['job']:>18} {r['job_wall_sec']:>6} {r['lower_bound_sec']:>6} "
              f"{r['makespan_ratio']:>6} {r['peak_rss_mb']:>11} {r['peak_rss_mb_per_trial_in_flight']:>7}")


if __name__ == "__main__":
    main()
