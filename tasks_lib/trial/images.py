"""build-image: one image per task build context, named by the context's content.

The tag is a hash of every file under ``environment/`` (relative path, mode, bytes; symlinks by
target), so editing a file the Dockerfile COPYs produces a new tag and a rebuild, while an
unchanged context reuses the existing image with no build at all. ``[environment] docker_image``
is honoured first: used when present locally, pulled when possible, else we fall back to building
``environment/`` and say so in the build log (a pull that fails for lack of network says so in one
line). ``--build`` drops ``docker_image`` (``Task.built_from_context``): always ``environment/``.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from pathlib import Path
from typing import TextIO

from docker.errors import APIError, BuildError, DockerException, ImageNotFound

from tasks_lib import interrupts
from tasks_lib.trial.build_failure import build_failure_reason
from tasks_lib.container import buildkit_build
from tasks_lib.container.build_lock import build_lock
from tasks_lib.container.deadline_stream import stream_with_deadline
from tasks_lib.container.docker_client import DOCKER_ERRORS, LABEL_CONTEXT, LABEL_ROOT, get_client
from tasks_lib.errors import ImageBuildError
from tasks_lib.records.record_models import ImageOutcome
from tasks_lib.task.task_model import Task

_tag_locks: dict[str, threading.Lock] = {}
_tag_locks_guard = threading.Lock()
PULL_TIMEOUT_SEC = 120


def context_hash(env_dir: Path) -> str:
    """sha256 over (relative path, mode, content) of everything under the build context."""
    h = hashlib.sha256()
    for item in sorted(env_dir.rglob("*"), key=lambda p: p.relative_to(env_dir).as_posix()):
        rel = item.relative_to(env_dir).as_posix()
        st = item.lstat()
        h.update(f"{rel}\0{st.st_mode:o}\0".encode())
        if item.is_symlink():
            h.update(os.readlink(item).encode())
        elif item.is_file():
            h.update(hashlib.sha256(item.read_bytes()).digest())
        h.update(b"\n")
    return h.hexdigest()


def image_tag(task: Task) -> str:
    repo = re.sub(r"[^a-z0-9._-]+", "-", task.name.lower()).strip("-._") or "task"
    return f"tbflow-task/{repo}:{context_hash(task.environment_dir)[:20]}"


def _lock_for(tag: str) -> threading.Lock:
    with _tag_locks_guard:
        return _tag_locks.setdefault(tag, threading.Lock())


def _exists(tag: str) -> bool:
    try:
        get_client().images.get(tag)
        return True
    except ImageNotFound:
        return False


def image_present(task: Task) -> bool:
    """Whether the image ``ensure_image`` would return for ``task`` exists locally now."""
    try:
        tag = task.config.environment.docker_image
        return (tag is not None and _exists(tag)) or _exists(image_tag(task))
    except DOCKER_ERRORS:
        return False


def ensure_image(task: Task, log_path: Path, log_rel: str) -> ImageOutcome:
    """Return an image for ``task``, building it if needed; raise ``ImageBuildError`` on failure.

    ``log_rel`` is how records refer to ``log_path`` (relative to the trial dir).
    """
    start = time.monotonic()
    env = task.config.environment
    if env.docker_image:
        with _lock_for(env.docker_image):
            pull_failed = None if _exists(env.docker_image) else _try_pull(env.docker_image, log_path)
            if pull_failed is None:
                return ImageOutcome(tag=env.docker_image, source="docker_image",
                                    build_log=log_rel if log_path.exists() else None,
                                    duration_sec=time.monotonic() - start)
        if not (task.environment_dir / "Dockerfile").is_file():
            raise ImageBuildError("build-image", f"image {env.docker_image} is not present locally and the pull "
                                  f"failed ({pull_failed}); the task has no environment/Dockerfile to build instead",
                                  log_rel)
    elif not (task.environment_dir / "Dockerfile").is_file():  # planning refuses --build of such a task
        error = ImageBuildError("build-image", "--build: the task has no environment/Dockerfile to build", log_rel)
        error.retryable = False
        raise error
    tag = image_tag(task)
    with _lock_for(tag), build_lock(tag, interrupts.check):  # one build per tag: this process, then this host
        if _exists(tag):
            return ImageOutcome(tag=tag, source="reused", duration_sec=time.monotonic() - start)
        _build(task, tag, log_path, log_rel)
    return ImageOutcome(tag=tag, source="built", build_log=log_rel, duration_sec=time.monotonic() - start)


#: what a pull failing for lack of network says (Docker's resolver and dialer errors)
_NO_NETWORK = re.compile(r"no such host|dial tcp|network is unreachable|connection refused|i/o timeout|"
                         r"TLS handshake timeout|Temporary failure in name resolution", re.I)


def pull_problem(why: str) -> str:
    """One line for a failed pull: lack of network said as such, else Docker's first line."""
    first = why.strip().splitlines()[0] if why.strip() else "unknown error"
    return f"no network to reach its registry: {first}" if _NO_NETWORK.search(why) else first


def _try_pull(image: str, log_path: Path) -> str | None:
    """Pull ``image`` within ``PULL_TIMEOUT_SEC``; None when it is here now, else why not (one line,
    also in the build log)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    repo, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "latest")
    errors: list[str] = []

    def note(chunk: dict) -> None:
        if "error" in chunk:
            errors.append(str(chunk["error"]))

    try:
        finished = stream_with_deadline(lambda api: api.pull(repo, tag=tag, stream=True, decode=True), note,
                                        PULL_TIMEOUT_SEC, f"pull-{image}")
        interrupts.check()
        why = None if finished and not errors and _exists(image) else (
            errors[0] if errors else f"the pull did not finish within {PULL_TIMEOUT_SEC}s (cancelled)")
    except DOCKER_ERRORS as exc:
        why = str(exc)
    if why is None:
        log_path.write_text(f"pulled {image}\n", encoding="utf-8")
        return None
    log_path.write_text(f"[environment] docker_image {image} is not present locally and the pull failed:\n"
                        f"  {why}\nbuilding environment/ instead\n", encoding="utf-8")
    return pull_problem(why)


def extra_build_options() -> dict:
    """Additions to every ``docker build`` call: none. A seam for tests (e.g. ``network_mode``
    none, so a test's RUN step does not depend on the host's bridge network); BuildKit builds
    honour its ``network_mode`` as ``--network``."""
    return {}


def _build(task: Task, tag: str, log_path: Path, log_rel: str) -> None:
    """Build ``tag`` under the task's ``build_timeout_sec``, streaming its log to ``log_path``.

    BuildKit (``buildkit_build``) when the ``docker buildx`` plugin is here, else the legacy
    builder, said so in the log. At the deadline the build is cancelled in the daemon and the
    trial is invalid: environment with the build log; a timed-out build is not retried (it would
    time out again).
    """
    timeout = task.config.environment.build_timeout_sec
    labels = {LABEL_ROOT: "1", "tbflow.task": task.name, LABEL_CONTEXT: str(task.environment_dir.resolve())}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        if buildkit_build.buildx_available():
            request = buildkit_build.BuildRequest(task.environment_dir, tag, labels,
                                                  extra_build_options().get("network_mode"))
            outcome = buildkit_build.build(request, log, timeout, interrupts.stopping)
            finished, errors = outcome.finished, outcome.errors
            if finished and outcome.returncode and not errors:
                errors.append(f"docker buildx build exited with code {outcome.returncode}")
        else:
            log.write("(no docker buildx plugin here: the legacy builder builds this image, and refuses RUN --mount, "
                      "heredocs and COPY --chmod; scripts/setup.sh installs the plugin)\n")
            finished, errors = _legacy_build(task, tag, labels, log, timeout)
        if not finished:
            interrupts.check()
            log.write(f"\nERROR: image build timed out after {timeout:g} s ([environment] build_timeout_sec); "
                      "tbflow cancelled it\n")
    if not finished:
        raise BuildTimeout("build-image", f"image build timed out after {timeout:g} s", log_rel)
    if errors or not _exists(tag):
        text = log_path.read_text(encoding="utf-8", errors="replace")
        raise ImageBuildError("build-image", build_failure_reason(text, errors), log_rel)


def _legacy_build(task: Task, tag: str, labels: dict[str, str], log: TextIO, timeout: float) -> tuple[bool, list[str]]:
    """docker-py's ``build`` (the legacy builder); at the deadline ``deadline_stream`` cuts its
    connection and the daemon stops the ``RUN`` step and removes its container (``forcerm``)."""
    errors: list[str] = []
    log.write(f"$ docker build -t {tag} {task.environment_dir}\n")
    log.flush()

    def write(chunk: dict) -> None:
        if "stream" in chunk:
            log.write(chunk["stream"])
        elif "status" in chunk:
            log.write(f"{chunk['status']} {chunk.get('progress', '')}\n")
        if "error" in chunk or "errorDetail" in chunk:
            msg = chunk.get("error") or chunk["errorDetail"].get("message", "")
            log.write(f"ERROR: {msg}\n")
            errors.append(msg)
        log.flush()

    try:
        finished = stream_with_deadline(
            lambda api: api.build(path=str(task.environment_dir), tag=tag, rm=True, forcerm=True, decode=True,
                                  labels=labels, **extra_build_options()),
            write, timeout, f"build-{tag}")
    except (APIError, BuildError, DockerException, OSError) as exc:
        finished = True
        errors.append(str(exc))
        log.write(f"ERROR: {exc}\n")
    return finished, errors


class BuildTimeout(ImageBuildError):
    """The build ran past ``build_timeout_sec`` and was cancelled; a new try would only repeat it."""

    retryable = False
