"""Issue 19: no deployment parameter matched the CLI's ``--fail-on-invalid``, and a job run that
ended with trials left without a record (a lost shard past its re-runs) looked as clean as an
all-scored one. The parameter takes the CLI's thresholds, is checked by the server's schema, and
the gate counts unrecorded trials like invalid ones."""

import pytest
from pydantic import ValidationError

from report_fixtures import make_trial

from flows.job.job_config import JobConfig
from flows.job.job_result import JobResult
from flows.job.job_verdict import InvalidTrialsGate, final_state, verdict_of
from tasks_lib.report.invalid_gate import parse_threshold


def _result(records, planned: int) -> JobResult:
    return JobResult(job_id="j1", job_name="nightly-1", dataset="ds", location="host:/jobs/nightly-1", config={},
                     tbflow_version="0", harness_versions={}, started_at="2026-12-01T00:00:00Z",
                     trial_ids=[f"t{i}" for i in range(planned)], job_dir="/jobs/nightly-1", records=records,
                     unfinished=[])


def test_unrecorded_trials_trip_the_gate_and_name_the_state():
    result = _result([make_trial("a", "oracle"), make_trial("b", "oracle")], planned=3)
    verdict = verdict_of(result, parse_threshold("any"))
    assert (verdict.tripped, verdict.summary()) == (True, "3 trials: 2 scored, 0 invalid, 1 without a record")
    assert verdict.gate == ("0 invalid trials + 1 without a record of 3 (33.3%) exceeds parameter fail_on_invalid "
                            "(any invalid trial fails)")
    state = final_state(result, verdict)
    assert (state.type.value, state.name) == ("FAILED", "Not all scored")
    assert isinstance(state.data, InvalidTrialsGate) and state.data.result is result


def test_within_the_threshold_is_completed_but_named_apart_from_all_scored():
    records = [make_trial(f"t{i}", "oracle") for i in range(9)] + [make_trial("bad", "oracle", invalid="verifier")]
    result = _result(records, planned=10)
    verdict = verdict_of(result, parse_threshold("10%"))
    assert not verdict.tripped and verdict.gate.endswith("is within parameter fail_on_invalid=10%"), verdict.gate
    state = final_state(result, verdict)
    assert (state.type.value, state.name, state.message) == ("COMPLETED", "Not all scored",
                                                             "10 trials: 9 scored, 1 invalid")
    clean = _result(records[:9], planned=9)
    state = final_state(clean, verdict_of(clean, None))
    assert (state.type.value, state.name, state.message) == ("COMPLETED", "Completed", "9 of 9 trials scored")


@pytest.mark.parametrize("given, kept", [("any", "any"), ("5", "5"), ("10%", "10%"), (" 2 ", "2")])
def test_parameter_takes_the_clis_thresholds(given, kept):
    assert JobConfig(dataset="ds", fail_on_invalid=given).fail_on_invalid == kept


def test_bad_threshold_is_refused_with_the_gates_own_message():
    with pytest.raises(ValidationError) as err:
        JobConfig(dataset="ds", fail_on_invalid="lots")
    assert "'lots' is not a threshold" in str(err.value)
    schema = JobConfig.model_json_schema()["properties"]["fail_on_invalid"]
    assert any(s.get("pattern") for s in schema["anyOf"]), schema  # the server refuses it before a run exists
