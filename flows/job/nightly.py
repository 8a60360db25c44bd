"""The job flow's nightly parts: a templated ``job_name`` and the cross-night artifacts.

* ``scheduled_job_name``: ``nightly-{date}`` rendered from the flow run's *scheduled* start
  (Prefect's ``flow_run.scheduled_start_time``, the run's expected start, set once per flow run):
  a retry of the run continues its own job, the next night's run starts a new one.
* ``publish_nightly_views``: after a templated job's report, two Markdown artifacts with keys that
  stay the same night after night, so the Prefect UI (Artifacts) shows their history:
  ``<stem>-trend`` (mean reward per harness per night over the last nights of the template in the
  same jobs dir, ``tasks_lib/report/trend.py``) and ``<stem>-diff`` (this night against the
  previous one, the same diff ``tbflow diff`` prints). ``<stem>`` is the template without its
  fields: ``nightly-{date}`` publishes ``nightly-trend`` and ``nightly-diff``.

Like the report artifacts, these are a view: a failure to build or publish them is a warning and
never fails a job (docs/deployments.md "Nightly runs").
"""

from __future__ import annotations

from pathlib import Path

from tasks_lib.errors import InputError
from tasks_lib.job.job_name_template import is_template, render_job_name, template_stem
from tasks_lib.report.job_diff import diff_jobs
from tasks_lib.report.render_diff import render_diff
from tasks_lib.report.report_files import RESULTS_JSON
from tasks_lib.report.trend import TREND_NIGHTS, find_nights, read_results, render_trend, trend_of
from tasks_lib import interrupts
def scheduled_job_name(name: str | None) -> str | None:
    """``name`` rendered from this flow run's scheduled start (now outside a flow run)."""
    if not is_template(name):
        return name
    from prefect.runtime import flow_run

    return render_job_name(name, flow_run.scheduled_start_time)


def hook_job_name(flow_run) -> str | None:  # noqa: ANN001 - Prefect's FlowRun
    """The job name a state hook's ``flow_run`` ran, None when unnamed or not renderable."""
    name = (flow_run.parameters or {}).get("job_name")
    if not is_template(name):
        return name
    when = flow_run.expected_start_time
    try:
        return render_job_name(name, when) if when is not None else None
    except InputError:
        return None


def nightly_markdown(template: str, job_dir: Path) -> tuple[str, str]:
    """(trend, diff) Markdown of the templated job ``job_dir`` and its earlier nights."""
    nights = find_nights(job_dir.parent, template)
    loaded = [(when, read_results(d), d.name) for when, d in nights]
    trend = render_trend(trend_of(template, loaded, TREND_NIGHTS))
    mine = next((i for i, (_, d) in enumerate(nights) if d.name == job_dir.name), None)
    earlier = [n for n in loaded[:mine] if n[1] is not None] if mine is not None else []
    current = loaded[mine][1] if mine is not None else read_results(job_dir)  # read once, with the nights
    if current is None:
        diff = f"# Diff of `{job_dir.name}`\n\nThis job has no {RESULTS_JSON} yet.\n"
    elif not earlier:
        diff = f"# Diff of `{job_dir.name}`\n\nNo earlier night of this template has results: nothing to compare.\n"
    else:
        previous = earlier[-1][1]
        assert previous is not None
        try:
            diff = render_diff(diff_jobs(previous, current), collapsible=False)
        except InputError as exc:  # e.g. the nights share no harness
            diff = f"# Diff of `{previous.job.job_name}` and `{job_dir.name}`\n\nNot comparable: {exc.message}\n"
    return trend, diff


def publish_nightly_views(template: str | None, job_dir: Path, logger) -> None:  # noqa: ANN001
    """Publish ``<stem>-trend`` and ``<stem>-diff`` for a job named by ``template`` (else nothing)."""
    if not is_template(template) or interrupts.stopping():
        return
    assert template is not None
    from prefect.artifacts import create_markdown_artifact

    from flows.report_flow import artifact_key

    stem = template_stem(template)
    try:
        trend, diff = nightly_markdown(template, Path(job_dir))
        create_markdown_artifact(key=artifact_key(stem, "trend"), markdown=trend,
                                 description=f"Mean reward per night of the jobs {template}")
        create_markdown_artifact(key=artifact_key(stem, "diff"), markdown=diff,
                                 description=f"{Path(job_dir).name} against the night before")
        logger.info("published the %s and %s artifacts", artifact_key(stem, "trend"), artifact_key(stem, "diff"))
    except Exception as exc:  # noqa: BLE001 - a view; the job and its reports are fine
        logger.warning("could not publish the nightly trend and diff: %s", exc)
