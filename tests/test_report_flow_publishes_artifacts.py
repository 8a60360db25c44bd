"""The report flow writes the three files and publishes a Markdown and a table artifact."""

import asyncio
import os

from report_fixtures import make_job, make_trial, write_job_dir

from flows.report_flow import artifact_key, report_flow, trial_table
from tasks_lib.report.results_build import load_results


def test_artifact_keys_are_valid_slugs():
    assert artifact_key("Run_1.v2", "report") == "run-1-v2-report"
    assert artifact_key("__", "trials") == "job-trials"
    assert artifact_key("2025-03-01T12.00", "report") == "2025-03-01t12-00-report"


def test_trial_table_rows(tmp_path):
    trials = [make_trial("a", "codex"), make_trial("b", "codex", invalid="verifier")]
    rows = trial_table(load_results(write_job_dir(tmp_path, make_job(trials), trials)))
    assert rows[1]["status"] == "invalid: verifier" and rows[1]["reward"] is None
    assert rows[1]["log"] == "trials/b__codex__1/verifier/test-stdout.txt"
    assert rows[0]["status"] == "scored" and rows[0]["reward"] == 1.0


def test_report_flow_writes_files_and_artifacts(tmp_path, prefect_local):
    """``prefect_local`` (tests/conftest.py): the session's one temporary Prefect server."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    trials = [make_trial("a", "codex"), make_trial("b", "codex", invalid="environment")]
    job_dir = write_job_dir(tmp_path, make_job(trials, name="Nightly_Run.1"), trials)

    out = report_flow(str(job_dir))
    assert (out["trials"], out["scored"], out["invalid"]) == (2, 1, 1)
    for key in ("report_md", "junit_xml", "results_json"):
        assert os.path.isfile(out[key])

    async def read(key):
        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))

    (md,) = asyncio.run(read("nightly-run-1-report"))
    assert md.type == "markdown" and "# tbflow report: Nightly\\_Run.1" in md.data
    assert "<details>" not in md.data
    (table,) = asyncio.run(read("nightly-run-1-trials"))
    assert table.type == "table" and "invalid: environment" in table.data
