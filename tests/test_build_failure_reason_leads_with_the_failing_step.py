"""A failed build's reason used to start with "docker build failed:" and the log's last lines, so
every one-line view (CLI, report table, trials artifact, flow log) showed no cause. Its first line
is now the failing step and the engine's error; the log's end follows."""

from tasks_lib.trial.build_failure import STEP_CHARS, build_failure_reason, last_step

LEGACY = """$ docker build -t tbflow-task/x:abc /tasks/x/environment
Step 1/3 : FROM tbflow/base:bookworm
 ---> 9d51f78dfa38
Step 2/3 : RUN echo fine
 ---> Running in 1a2b
fine
Step 3/3 : RUN make -C /src
 ---> Running in 3c4d
make: *** No targets specified and no makefile found.  Stop.
ERROR: The command '/bin/sh -c make -C /src' returned a non-zero code: 2
"""

BUILDKIT = """#5 [1/2] FROM docker.io/library/debian:bookworm
#5 DONE 0.1s
#6 [2/2] RUN --mount=type=cache,target=/root/.cache pip install nothing-here
#6 0.512 ERROR: No matching distribution found for nothing-here
#6 ERROR: process "/bin/sh -c pip install nothing-here" did not complete successfully: exit code: 1
"""


def test_legacy_build_reason_names_the_failing_step_and_error_on_its_first_line():
    reason = build_failure_reason(LEGACY, ["The command '/bin/sh -c make -C /src' returned a non-zero code: 2"])
    head, _, body = reason.partition("\n")
    assert head == ("docker build failed at Step 3/3 (RUN make -C /src): "
                    "The command '/bin/sh -c make -C /src' returned a non-zero code: 2")
    assert "No targets specified" in body and body.splitlines()[-1].startswith("ERROR:")


def test_buildkit_step_lines_are_read_too():
    err = 'process "/bin/sh -c pip install nothing-here" did not complete successfully: exit code: 1'
    head = build_failure_reason(BUILDKIT, [err]).splitlines()[0]
    assert head.startswith("docker build failed at Step 2/2 (RUN --mount=type=cache")
    assert head.endswith("exit code: 1")


def test_the_last_error_is_the_cause_and_only_its_first_line_is_in_the_head():
    head = build_failure_reason(LEGACY, ["pull: no network", "step failed: code 2\nmore detail"]).splitlines()[0]
    assert head.endswith(": step failed: code 2")


def test_a_log_without_steps_or_errors_still_says_the_build_failed():
    assert build_failure_reason("", []) == "docker build failed"
    assert build_failure_reason("some output\n", []) == "docker build failed\nsome output"
    assert last_step("no steps here") is None


def test_a_very_long_step_is_cut_in_the_head():
    step = last_step("Step 1/1 : RUN " + "x" * 1000)
    assert step is not None and len(step) < STEP_CHARS + 20 and step.endswith("…)")


INTERLEAVED = """#4 [a 1/2] FROM docker.io/tbflow/base:bookworm
#6 [stage-1 2/3] RUN echo about to fail && exit 3
#6 0.211 about to fail
#5 [a 2/2] RUN sleep 1 && echo ok-a
#6 ERROR: process "/bin/sh -c echo about to fail && exit 3" did not complete successfully: exit code: 3
#5 CANCELED
ERROR: failed to solve: process "/bin/sh -c echo about to fail && exit 3" did not complete successfully: exit code: 3
"""


def test_buildkit_parallel_stages_name_the_step_that_failed_not_the_last_one_shown():
    assert last_step(INTERLEAVED) == "Step 2/3 (RUN echo about to fail && exit 3)"


def test_buildkit_reason_shows_the_failed_steps_own_output_not_the_interleaved_tail():
    """BuildKit prefixes each output line with ``#N SECONDS`` and interleaves parallel stages: the
    reason's body is the failing step's own lines, as the step printed them."""
    from tasks_lib.trial.build_failure import build_failure_reason

    log = "\n".join([
        "#5 [stage-a 2/2] RUN make", "#6 [stage-b 2/2] RUN sleep 1; echo other",
        "#5 0.210 cc -o app app.c", "#5 0.655 app.c:3: error: expected ';'", "#6 0.900 other",
        "#5 ERROR: process \"/bin/sh -c make\" did not complete successfully: exit code: 2",
        "#6 1.100 other-stage-still-printing", "------", " > [stage-a 2/2] RUN make:", "0.655 app.c:3: error",
        "------", "ERROR: failed to solve: process \"/bin/sh -c make\" did not complete successfully: exit code: 2"])
    reason = build_failure_reason(log, ["process \"/bin/sh -c make\" did not complete successfully: exit code: 2"])
    head, *body = reason.splitlines()
    assert head.startswith("docker build failed at Step 2/2 (RUN make): process")
    assert body == ["cc -o app app.c", "app.c:3: error: expected ';'"]
