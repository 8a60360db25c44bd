"""build-image: one image per task build context, named by the context's content.

The tag is a hash of every file under ``environment/`` (relative path, mode, bytes; symlinks by
target), so editing a file the Dockerfile COPYs produces a new tag and a rebuild, while an
unchanged context reuses the existing image with no build at all. ``[environment] docker_image``
is honoured first: used when present locally, pulled when possible, else we fall back to building
``environment/`` and say so in the build log.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from pathlib import Path

from docker.errors import APIError, BuildError, DockerException, ImageNotFound

from tasks_lib.trial import interrupts
from tasks_lib.container.docker_client import LABEL_ROOT, get_client
from tasks_lib.errors import ImageBuildError
from tasks_lib.job.records import ImageOutcome
from tasks_lib.job.task_model import Task

_tag_locks: dict[str, threading.Lock] = {}
_tag_locks_guard = threading.Lock()
PULL_TIMEOUT_SEC = 120
LOG_TAIL_LINES = 15


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


def _tail(text: str, n: int = LOG_TAIL_LINES) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


def image_present(task: Task) -> bool:
    """Whether the image ``ensure_image`` would return for ``task`` exists locally now."""
    try:
        tag = task.config.environment.docker_image
        return (tag is not None and _exists(tag)) or _exists(image_tag(task))
    except DockerException:
        return False


def ensure_image(task: Task, log_path: Path, log_rel: str) -> ImageOutcome:
    """Return an image for ``task``, building it if needed; raise ``ImageBuildError`` on failure.

    ``log_rel`` is how records refer to ``log_path`` (relative to the trial dir).
    """
    start = time.monotonic()
    env = task.config.environment
    if env.docker_image:
        with _lock_for(env.docker_image):
            if _exists(env.docker_image) or _try_pull(env.docker_image, log_path):
                return ImageOutcome(tag=env.docker_image, source="docker_image",
                                    build_log=log_rel if log_path.exists() else None,
                                    duration_sec=time.monotonic() - start)
        if not (task.environment_dir / "Dockerfile").is_file():
            raise ImageBuildError("build-image", f"image {env.docker_image} is not present and cannot be pulled; "
                                  "the task has no environment/Dockerfile to build instead", log_rel)
    tag = image_tag(task)
    with _lock_for(tag):
        if _exists(tag):
            return ImageOutcome(tag=tag, source="reused", duration_sec=time.monotonic() - start)
        _build(task, tag, log_path, log_rel)
    return ImageOutcome(tag=tag, source="built", build_log=log_rel, duration_sec=time.monotonic() - start)


def _try_pull(image: str, log_path: Path) -> bool:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        get_client().images.pull(image)
        log_path.write_text(f"pulled {image}\n", encoding="utf-8")
        return True
    except DockerException as exc:
        log_path.write_text(f"[environment] docker_image {image} is not present locally and the pull failed:\n"
                            f"  {exc}\nbuilding environment/ instead\n", encoding="utf-8")
        return False


def _build(task: Task, tag: str, log_path: Path, log_rel: str) -> None:
    """Run ``docker build`` with the task's build timeout, streaming its log to ``log_path``.

    The build runs in a helper thread so the deadline holds even when the daemon is silent; at
    the deadline the HTTP stream is closed, which makes the daemon cancel the build.
    """
    timeout = task.config.environment.build_timeout_sec
    log_path.parent.mkdir(parents=True, exist_ok=True)
    outcome: dict[str, object] = {}
    api = get_client().api
    responses: list = []

    def consume() -> None:
        try:
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(f"$ docker build -t {tag} {task.environment_dir}\n")
                stream = api.build(path=str(task.environment_dir), tag=tag, rm=True, forcerm=True,
                                   decode=True, labels={LABEL_ROOT: "1", "tbflow.task": task.name})
                responses.append(stream)
                for chunk in stream:
                    if "stream" in chunk:
                        log.write(chunk["stream"])
                    elif "status" in chunk:
                        log.write(f"{chunk['status']} {chunk.get('progress', '')}\n")
                    if "error" in chunk or "errorDetail" in chunk:
                        msg = chunk.get("error") or chunk["errorDetail"].get("message", "")
                        log.write(f"ERROR: {msg}\n")
                        outcome["error"] = msg
                    log.flush()
        except (APIError, BuildError, DockerException, OSError) as exc:
            outcome["error"] = str(exc)
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(f"ERROR: {exc}\n")

    worker = threading.Thread(target=consume, name=f"build-{tag}", daemon=True)
    worker.start()
    deadline = time.monotonic() + timeout
    while worker.is_alive() and time.monotonic() < deadline and not interrupts.stopping():
        worker.join(min(0.5, max(0.0, deadline - time.monotonic())))
    if worker.is_alive():
        for stream in responses:
            close = getattr(stream, "close", None)
            if close:
                close()
        interrupts.check()
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"\nERROR: build exceeded [environment] build_timeout_sec = {timeout:g}s\n")
        raise ImageBuildError("build-image", f"build exceeded its timeout of {timeout:g}s", log_rel)
    if "error" in outcome or not _exists(tag):
        tail = _tail(log_path.read_text(encoding="utf-8", errors="replace"))
        raise ImageBuildError("build-image", f"docker build failed:\n{tail}", log_rel)
