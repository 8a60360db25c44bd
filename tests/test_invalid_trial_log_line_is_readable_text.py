"""Issue 31: an invalid trial's last log line in the Prefect UI was a Python repr, ``Finished in
state Invalid('invalid: verifier: test.sh gave no reward (...)', type=FAILED)``, quotes, escapes
and all. The task engine's finish line is rewritten as text (``Finished Invalid: invalid: ...``),
through a filter on Prefect's task-run logger that every handler (the UI's API handler too) sees;
a stage's try that the trial retries (``Retried``) is no error and is logged as INFO. The engine's
"Task run failed with state: Invalid(..., result=TrialRecord(...)) - Retries are exhausted" line
of a trial invalid after its environment retries is dropped: the finish line after it says it.
"""

from __future__ import annotations

import logging

import pytest
from report_fixtures import make_trial

from flows.job.run_ui import readable_finish, readable_task_run_logs
from flows.stage_retried import retried_state
from flows.trial_flow import verdict_state
from tasks_lib.errors import ImageBuildError


def test_the_finish_line_of_an_invalid_trial_reads_as_text():
    state = verdict_state(make_trial("t", invalid="verifier", reason="it's \"odd\"\nsecond line"))
    line = f"Finished in state {state}"
    assert line.startswith("Finished in state Invalid(") and "type=FAILED" in line, line
    text = readable_finish(line)
    assert text == f"Finished Invalid: {state.message}", text
    assert "type=FAILED" not in text and "\\'" not in text


def test_other_lines_are_left_alone_and_completed_reads_short():
    assert readable_finish("Finished in state Completed()") == "Finished Completed"
    assert readable_finish("Task run 'x' received parameters") is None


@pytest.mark.filterwarnings("ignore:Logger 'prefect.task_runs' attempted to send logs")  # not a run's line
def test_the_filter_rewrites_what_every_handler_of_the_task_run_logger_gets():
    readable_task_run_logs()
    readable_task_run_logs()  # once: a second install adds nothing
    got: list[tuple[int, str]] = []

    class Keep(logging.Handler):
        def emit(self, record):
            got.append((record.levelno, record.getMessage()))

    logger = logging.getLogger("prefect.task_runs")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        state = verdict_state(make_trial("t", invalid="verifier"))
        # as the engine logs a Failed state a task returned on its last allowed try: the whole record
        logger.error(f"Task run failed with state: {state!r} - Retries are exhausted", exc_info=True)
        logger.error(f"Finished in state {state}")
        retried = retried_state(ImageBuildError("build-image", "docker build failed"), 1)
        logger.error(f"Finished in state {retried}")  # as the engine logs any end but Completed
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert got == [(logging.ERROR, f"Finished Invalid: {state.message}"),
                   (logging.INFO, "Finished Retried: retried (1 retry left): build-image: docker build failed")], got
    assert sum(1 for f in logger.filters if type(f).__name__ == "_ReadableFinishFilter") == 1
