"""report.html on a 445-trial job with long transcripts: render time, sizes, browser load time.

Usage: .venv/bin/python bench/report_html.py [--tasks 89] [--attempts 5] [--steps 40]
       [--output-chars 8000] [--huge 3]

Builds a job directory in a temp dir from records made in Python (tests/report_fixtures.py, no
Docker): tasks x attempts trials of one model harness, each with an ATIF trajectory of ``steps``
agent steps whose tool output is ``output-chars`` long, plus ``huge`` trials with 500 steps of
50,000 characters (25 MB transcripts). Measures, in the same run:
  - baseline: rendering results.json + report.md + junit.xml (the reports before report.html);
  - report.html + report-trials/: render time, bytes of the index, of the trial pages;
  - reproducibility: the second render's bytes equal the first's;
  - headless Chromium: time to load and dump report.html with a filter in the hash, and the
    largest trial page, against the time to dump an empty page (the browser's own start-up).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from atif_fixture import trajectory  # noqa: E402
from headless_chromium import dump_dom  # noqa: E402
from report_fixtures import make_job, make_trial, write_job_dir  # noqa: E402

from tasks_lib.report.html.render_html import REPORT_HTML, TRIAL_PAGES  # noqa: E402
from tasks_lib.report.report_files import render_results_json, write_html  # noqa: E402
from tasks_lib.report.render_junit import render_junit  # noqa: E402
from tasks_lib.report.render_markdown import render_markdown  # noqa: E402
from tasks_lib.report.results_build import load_results  # noqa: E402


def long_trajectory(steps: int, chars: int) -> str:
    t = trajectory()
    agent = t["steps"][1]
    t["steps"] = [t["steps"][0]] + [
        {**agent, "step_id": i + 2, "tool_calls": [{**agent["tool_calls"][0], "tool_call_id": f"c{i}"}],
         "observation": {"results": [{"source_call_id": f"c{i}", "content": ("output line\n" * (chars // 12))}]}}
        for i in range(steps)]
    return json.dumps(t)


def build(root: Path, args: argparse.Namespace) -> Path:
    trials = [make_trial(f"task-{t:03d}", "codex", a, reward=float((t + a) % 2), model="openai/gpt-test")
              for t in range(args.tasks) for a in range(1, args.attempts + 1)]
    trials[1] = make_trial("task-000", "codex", 2, invalid="environment", model="openai/gpt-test")
    job_dir = write_job_dir(root, make_job(trials, attempts=args.attempts, model="openai/gpt-test"), trials)
    normal, huge = long_trajectory(args.steps, args.output_chars), long_trajectory(500, 50_000)
    for i, t in enumerate(trials):
        (job_dir / "trials" / t.trial_id / "trajectory.json").write_text(huge if i < args.huge else normal)
    return job_dir


def digest(job_dir: Path) -> str:
    h = hashlib.sha256()
    for p in sorted([job_dir / REPORT_HTML, *(job_dir / TRIAL_PAGES).glob("*.html")]):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def timed(fn, *a):  # noqa: ANN001, ANN202
    t0 = time.perf_counter()
    out = fn(*a)
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    for name, default in (("tasks", 89), ("attempts", 5), ("steps", 40), ("output-chars", 8000), ("huge", 3)):
        ap.add_argument(f"--{name}", type=int, default=default)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tbflow-bench-html-") as tmp:
        job_dir = build(Path(tmp), args)
        traj = [p.stat().st_size for p in (job_dir / "trials").glob("*/trajectory.json")]
        t_load, results = timed(load_results, job_dir)
        t_base, _ = timed(lambda: (render_results_json(results), render_markdown(results), render_junit(results)))
        t_html, _ = timed(write_html, job_dir, results)
        first = digest(job_dir)
        t_html2, _ = timed(write_html, job_dir, results)
        pages = sorted(p.stat().st_size for p in (job_dir / TRIAL_PAGES).glob("*.html"))
        empty = Path(tmp) / "empty.html"
        empty.write_text("<!DOCTYPE html><title>x</title>")
        browser = {name: statistics.median(timed(dump_dom, *target)[0] for _ in range(3))
                   for name, target in (("empty page", (empty,)),
                                        ("report.html#status=invalid", (job_dir / REPORT_HTML, "status=invalid")),
                                        ("largest trial page", (max((job_dir / TRIAL_PAGES).glob("*.html"),
                                                                    key=lambda p: p.stat().st_size),)))}
        out = {
            "trials": len(results.trials), "trajectory_bytes_total": sum(traj), "trajectory_bytes_max": max(traj),
            "load_results_s": round(t_load, 2), "baseline_json_md_junit_s": round(t_base, 2),
            "html_render_s": round(t_html, 2), "html_render_again_s": round(t_html2, 2),
            "reproducible": first == digest(job_dir),
            "report_html_bytes": (job_dir / REPORT_HTML).stat().st_size,
            "trial_page_bytes_median": int(statistics.median(pages)), "trial_page_bytes_max": pages[-1],
            "trial_pages_bytes_total": sum(pages),
            "chromium_dump_s_median_of_3": {k: round(v, 2) for k, v in browser.items()},
        }
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
