"""Writes small Terminal-Bench 2.x task directories for tests.

Each test states only what its task does differently (the solution, the verifier, a limit);
everything else is a minimal valid task on the offline base image with networking off.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

DEFAULT_DOCKERFILE = "FROM tbflow/base:bookworm\nWORKDIR /app\n"
REWARD_FROM_EXIT = textwrap.dedent("""\
    #!/bin/bash
    if {check}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
""")


def make_task(root: Path, name: str, *, solve: str = "true\n", test_sh: str | None = None,
              check: str = "true", dockerfile: str = DEFAULT_DOCKERFILE, env_files: dict[str, str] | None = None,
              agent_timeout: float = 60, verifier_timeout: float = 60, extra_toml: str = "", build_timeout: float = 300,
              instruction: str = "Do the task.\n", test_files: dict[str, str] | None = None) -> Path:
    """Create ``root/name`` and return its path.

    ``check`` is a shell condition the default ``test.sh`` turns into reward 1/0; ``test_sh``
    replaces the whole verifier script.
    """
    d = root / name
    (d / "environment").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "solution").mkdir()
    (d / "task.toml").write_text(textwrap.dedent(f"""\
        version = "1.0"

        [agent]
        timeout_sec = {agent_timeout}

        [verifier]
        timeout_sec = {verifier_timeout}

        [environment]
        build_timeout_sec = {build_timeout}
        allow_internet = false
        """) + extra_toml)
    (d / "instruction.md").write_text(instruction)
    (d / "environment" / "Dockerfile").write_text(dockerfile)
    for rel, text in (env_files or {}).items():
        (d / "environment" / rel).write_text(text)
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\n" + solve)
    (d / "tests" / "test.sh").write_text(test_sh if test_sh is not None else REWARD_FROM_EXIT.format(check=check))
    for rel, text in (test_files or {}).items():
        (d / "tests" / rel).write_text(text)
    return d


def record_of(result, task: str, harness: str = "oracle", attempt: int = 1):
    """The trial record of ``task`` in a ``JobResult``."""
    for r in result.records:
        if (r.spec.task_name, r.spec.harness, r.spec.attempt) == (task, harness, attempt):
            return r
    raise AssertionError(f"no record for {task}/{harness}/{attempt}; have {[r.trial_id for r in result.records]}")


def run_job_flow(dataset: Path, jobs_dir: Path, **kw):
    """Run the real job flow in this process (as ``tbflow run`` does) and return its ``JobResult``.
    A job naming a shipped CLI first waits for the session's bundle build (tests/cli_bundles_ahead.py)."""
    from cli_bundles_ahead import wait_for_bundles
    from flows.job.job_config import JobConfig

    wait_for_bundles(list(kw.get("harnesses") or []))
    kw.setdefault("job_name", "job")
    return job_result(**JobConfig(dataset=str(dataset), jobs_dir=str(jobs_dir), **kw).flow_parameters())


def job_result(**params):
    """The job flow's ``JobResult``, also for a job with invalid trials (whose run ends ``Failed``
    with the result in the ``NotAllScored`` it raises)."""
    from flows.job.job_verdict import NotAllScored
    from flows.job_flow import job_flow

    try:
        return job_flow(**params)
    except NotAllScored as exc:
        return exc.result


def first_build_fails(monkeypatch, task_name: str) -> list[str]:
    """Injected fault: the first image build of task ``task_name`` fails as a daemon hiccup does
    (a retryable ``ImageBuildError``), later ones build for real. Returns the tags it was asked to
    build, one per call."""
    import tasks_lib.trial.images as images
    from tasks_lib.errors import ImageBuildError

    real_build, calls = images._build, []

    def flaky_build(task, tag, log_path, log_rel):
        if task.path.name != task_name:
            return real_build(task, tag, log_path, log_rel)
        calls.append(tag)
        if len(calls) == 1:
            log_path.write_text("injected: connection reset by daemon\n")
            raise ImageBuildError("build-image", "docker build failed: injected hiccup", log_rel)
        return real_build(task, tag, log_path, log_rel)

    monkeypatch.setattr(images, "_build", flaky_build)
    return calls
