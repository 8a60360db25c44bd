"""results.json: the committed schema is current, and the file carries every full record."""

import json
from pathlib import Path

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.report.report_files import write_reports
from tasks_lib.report.results_model import RESULTS_SCHEMA_VERSION, Results, schema_text

ROOT = Path(__file__).resolve().parents[1]


def test_committed_schema_matches_the_model():
    committed = (ROOT / "docs" / "results.schema.json").read_text(encoding="utf-8")
    assert committed == schema_text(), (
        "docs/results.schema.json is stale: run `python -m tasks_lib.report.results_model > docs/results.schema.json` "
        "and bump RESULTS_SCHEMA_VERSION if the change is incompatible")
    schema = json.loads(committed)
    assert f"schema_version {RESULTS_SCHEMA_VERSION}" in schema["title"]
    assert "TrialRecord" in schema["$defs"]


def test_results_json_holds_every_full_record_and_rerenders_identically(tmp_path):
    trials = [make_trial("a", "codex"), make_trial("b", "codex", invalid="harness"),
              make_trial("c", "codex", reward=0.0)]
    job_dir = write_job_dir(tmp_path, make_job(trials), trials)
    paths = write_reports(job_dir)

    data = json.loads(paths.results_json.read_text(encoding="utf-8"))
    assert data["schema_version"] == RESULTS_SCHEMA_VERSION
    by_id = {t["record"]["spec"]["trial_id"]: t["record"] for t in data["trials"]}
    assert by_id == {t.trial_id: json.loads(t.model_dump_json()) for t in trials}
    assert data["summaries"][0]["scored"] == 2 and data["summaries"][0]["invalid"] == 1

    parsed = Results.model_validate_json(paths.results_json.read_text(encoding="utf-8"))
    assert parsed == paths.results

    before = {p: p.read_bytes() for p in (paths.markdown, paths.junit, paths.results_json)}
    write_reports(job_dir)
    assert {p: p.read_bytes() for p in before} == before  # deterministic re-render
