"""A plug-in's own exception is its harness's failure: ``prepare`` and ``command`` raise a typed
``HarnessPluginError`` carrying the traceback (the trial flow keeps it as ``harness-error.txt``
and records invalid: harness); a usage parser that raises reads as "no usage" with its traceback
kept; tbflow's typed errors pass through unchanged; built-ins are never wrapped."""

import pytest

from plugin_fixtures import harness_source, plugin_site

from harnesses.plugin_guard import GuardedHarness, guarded
from harnesses.registry import get_harness, resolve_harness
from tasks_lib.errors import HarnessPluginError, TransferError
from tasks_lib.records.harness_source import HarnessSource
from tasks_lib.records.record_models import StageError
from tasks_lib.trial.trial_verdict import classify

__all__ = ["plugin_site"]
PLUGIN = HarnessSource(origin="file", reference="x.py:X", target="x.py:X")


class _Raising:
    name, version, kind, wire_api, semantic_exit_codes = "raising", "1", "model", None, {}

    def __init__(self, exc):
        self.exc = exc

    def prepare(self, task):
        raise self.exc

    def command(self, task, prepared, access):
        raise self.exc

    def parse_usage(self, agent_dir):
        raise self.exc


def test_prepare_and_command_bugs_become_harness_plugin_errors_with_the_traceback():
    h = guarded(_Raising(KeyError("boom")), PLUGIN)  # type: ignore[arg-type]
    for call, stage in ((lambda: h.prepare(None), "prepare-harness"), (lambda: h.command(None, None, None), "run-agent")):
        with pytest.raises(HarnessPluginError) as caught:
            call()
        assert caught.value.stage == stage and "raised KeyError" in str(caught.value)
        assert "Traceback" in caught.value.traceback_text and "KeyError: 'boom'" in caught.value.traceback_text
    error = StageError(stage="prepare-harness", kind="harness", message="x", evidence="harness-error.txt")
    verdict = classify("model", error, None, None)
    assert (verdict.status, verdict.kind, verdict.evidence) == ("invalid", "harness", "harness-error.txt")


def test_tbflow_typed_errors_pass_through_a_plugin_unchanged():
    h = guarded(_Raising(TransferError("run-agent", "upload failed")), PLUGIN)  # type: ignore[arg-type]
    with pytest.raises(TransferError):
        h.prepare(None)


def test_a_raising_usage_parser_reads_as_no_usage_and_keeps_its_traceback(tmp_path):
    (tmp_path / "agent").mkdir()
    h = guarded(_Raising(ValueError("bad log")), PLUGIN)  # type: ignore[arg-type]
    assert h.parse_usage(tmp_path / "agent") is None
    assert "ValueError: bad log" in (tmp_path / "harness-error.txt").read_text()


def test_built_ins_are_not_wrapped(plugin_site, tmp_path):
    assert not isinstance(guarded(get_harness("oracle"), resolve_harness("oracle").source), GuardedHarness)
    path = tmp_path / "agent.py"
    path.write_text(harness_source())
    ref = f"{path}:MyAgent"
    assert isinstance(guarded(get_harness(ref), resolve_harness(ref).source), GuardedHarness)
