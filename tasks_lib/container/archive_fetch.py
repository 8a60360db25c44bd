"""Copies out of a trial container, each under a deadline and a byte bound.

What a container path holds is the agent's doing: a sparse 1 TiB file streams for hours and fills
whatever spools it. So every copy out (``get_archive``) is consumed on a client of its own that is
cut at a deadline and at once when the job is stopping (``deadline_stream``: merely leaving the
stream unread keeps the engine archiving, and the engine cannot remove the container meanwhile),
and a copy for a host-side agent (``download``) is also cut at a number of bytes (docs/limits.md).
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import requests
from docker.errors import APIError, NotFound
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from tasks_lib import interrupts
from tasks_lib.container.archives import extract_checked
from tasks_lib.container.deadline_stream import stream_with_deadline
from tasks_lib.container.docker_client import DOCKER_ERRORS
from tasks_lib.errors import DownloadBoundExceeded, TransferError, disk_full

T = TypeVar("T")


def _transient(exc: BaseException) -> bool:
    """Docker API hiccups worth retrying for idempotent calls (5xx, dropped connections)."""
    if isinstance(exc, requests.exceptions.ConnectionError):
        return True
    return isinstance(exc, APIError) and exc.status_code is not None and exc.status_code >= 500 \
        and not isinstance(exc, NotFound)


retry_transient = retry(retry=retry_if_exception(_transient), stop=stop_after_attempt(4),
                        wait=wait_exponential(multiplier=0.2, max=3), reraise=True)


def fetch_archive(container: str, path: str, stage: str, consume: Callable[[Iterator[bytes]], T],
                  timeout_sec: float, late: Callable[[str, str], Exception] = TransferError) -> T | None:
    """``consume(the tar stream of path)``, cut at ``timeout_sec``; None when ``path`` is not there.

    Raises ``late`` at the deadline (``Interrupted`` when the job is stopping), a full disk of
    tbflow's as it is, and ``TransferError`` for the engine's failures."""
    kept: list[T] = []

    def fetch(api) -> Iterator[None]:  # noqa: ANN001 - the stream's own client
        stream, _ = retry_transient(api.get_archive)(container, path)
        kept.append(consume(stream))
        return iter(())

    try:
        ended = stream_with_deadline(fetch, lambda _: None, timeout_sec, f"download {path}")
    except NotFound:
        return None
    except TransferError:
        raise
    except (*DOCKER_ERRORS, OSError, tarfile.TarError) as exc:
        if disk_full(exc):  # our disk, not the container's doing: the job stops (see errors.disk_full)
            raise
        raise TransferError(stage, f"download of {path} failed: {exc}") from exc
    if not ended:
        interrupts.check()
        raise late(stage, f"the download of {path} took longer than {timeout_sec:g} s")
    return kept[0]


def counted(chunks: Iterator[bytes], max_bytes: int, path: str, stage: str) -> Iterator[bytes]:
    """The chunks, until more than ``max_bytes`` came: then ``DownloadBoundExceeded`` (the rest is
    never read; closing the stream's client makes the engine stop archiving)."""
    seen = 0
    for chunk in chunks:
        seen += len(chunk)
        if seen > max_bytes:
            raise DownloadBoundExceeded(stage, f"{path} is larger than the download bound of {max_bytes} bytes "
                                               "(its archive passed it; nothing was kept)")
        yield chunk


def download(container: str, path: str, dest: Path, stage: str, max_bytes: int, timeout_sec: float) -> list[str]:
    """Copy container ``path`` into ``dest/<basename>`` after checking it all (``extract_checked``),
    at most ``max_bytes`` of archive within ``timeout_sec``. Returns the member names ([] when
    ``path`` is not there)."""
    top = Path(path).name
    names = fetch_archive(container, path, stage,
                          lambda chunks: extract_checked(counted(chunks, max_bytes, path, stage), dest, top),
                          timeout_sec, DownloadBoundExceeded)
    return names or []
