"""Images built ahead of the trials that need them, so a cold image never holds a trial slot.

The job's build lane (``flows/job/trial_runner.py``) calls ``build_ahead`` for each image a queued
trial needs and does not find locally, while other trials run; a trial is started only once its
image is ready. ``build_ahead`` goes through ``ensure_image``, so its per-tag lock also keeps a
trial's own build (a retry) and the lane from ever building one tag at the same time, and the
lane builds each tag once per job.

The trial's build-image stage then takes the lane's result with ``take_ahead``, which keeps the
meaning of build-image unchanged: the first trial to take a successful build records it as
``built`` (``ahead``) with the build log copied into its directory, later ones find it
``reused``; a failed build is an ``ImageBuildError`` with the same message and the build log for
*every* trial that needed it, on its first try. A retry of such a trial builds again itself, as
a retry always did. Results live in memory for the job's process only; ``forget`` drops them at
the end of the job.
"""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path

from docker.errors import DockerException
from pydantic import BaseModel

from tasks_lib.errors import ImageBuildError
from tasks_lib.trial.images import ensure_image, image_present, image_tag
from tasks_lib.records.record_models import ImageOutcome
from tasks_lib.task.task_model import Task

TRIAL_LOG = "build.log"


class AheadBuild(BaseModel):
    """What the build lane did for one image."""

    key: str
    image: ImageOutcome | None = None
    error: str | None = None
    #: False when a new try would only repeat the failure (a build cut at ``build_timeout_sec``)
    retryable: bool = True
    log_path: Path | None = None


_results: dict[tuple[str, str], AheadBuild] = {}
_claimed: set[tuple[str, str]] = set()
_guard = threading.Lock()


def ahead_key(task: Task) -> str:
    """Which build a task's trials share: its build-context tag (also for ``docker_image`` tasks,
    whose fallback build is of that context)."""
    return image_tag(task)


def needs_build(task: Task) -> bool:
    """Whether a trial of ``task`` would have to pull or build its image now."""
    return not image_present(task)


def build_ahead(job_id: str, task: Task, log_dir: Path) -> AheadBuild | None:
    """Pull or build ``task``'s image now and keep the result for the job's trials.

    Returns None when nothing was built (the image was there after all) or when the engine
    failed outside the build itself: the trial then does its own build-image, with its own
    environment-failure handling.
    """
    key = ahead_key(task)
    log = log_dir / (re.sub(r"[^A-Za-z0-9._-]+", "_", key) + ".log")
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        outcome = ensure_image(task, log, str(log))
        result = AheadBuild(key=key, image=outcome, log_path=log if log.exists() else None)
    except ImageBuildError as exc:
        result = AheadBuild(key=key, error=exc.message, retryable=exc.retryable,
                            log_path=log if log.exists() else None)
    except DockerException:
        return None
    if result.image is not None and result.image.source == "reused":
        return None
    with _guard:
        _results[(job_id, key)] = result
    return result


def take_ahead(job_id: str, task: Task, trial_dir: Path, first_try: bool) -> ImageOutcome | None:
    """This trial's build-image outcome from the lane, or None when the trial must ensure its
    image itself. Raises ``ImageBuildError`` (evidence: the trial's ``build.log``) when the
    lane's build of this image failed and this is the trial's first try (not retryable when the
    lane's build was not: a build cut at ``build_timeout_sec``)."""
    key = (job_id, ahead_key(task))
    with _guard:
        result = _results.get(key)
        first_claim = result is not None and result.image is not None and key not in _claimed
        if first_claim:
            _claimed.add(key)
    if result is None:
        return None
    if result.image is not None:
        if not first_claim or not image_present(task):
            return None
        copied = _copy_log(result, trial_dir)
        return result.image.model_copy(update={"ahead": True, "build_log": TRIAL_LOG if copied else None})
    if not first_try:
        return None
    _copy_log(result, trial_dir)
    error = ImageBuildError("build-image", result.error or "docker build failed", TRIAL_LOG)
    error.retryable = result.retryable  # a timed-out build is not retried, whoever ran it
    raise error


def _copy_log(result: AheadBuild, trial_dir: Path) -> bool:
    if result.log_path is None or not result.log_path.is_file():
        return False
    trial_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result.log_path, trial_dir / TRIAL_LOG)
    return True


def forget(job_id: str) -> None:
    """Drop the job's build results (at the end of the job)."""
    with _guard:
        for key in [k for k in _results if k[0] == job_id]:
            _results.pop(key, None)
            _claimed.discard(key)
