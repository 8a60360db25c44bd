"""Walk an overlay's upper directory from the host without following anything the agent made.

The judge's scan of what the agent changed (``writable_layer.py``) and the ``storage_mb`` watch
(``layer_usage.py``) both read the same directory, which the agent controls: every directory is
opened relative to its parent's descriptor with ``O_NOFOLLOW``, never by path, so a link swapped
in is not followed and a tree deeper than PATH_MAX is read whole.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator

#: called with (path in the container, "read" | "open", the error) for a directory that could not
#: be listed or opened; its entries are then not walked
OnError = Callable[[str, str, OSError], None]


def _ignore(path: str, what: str, exc: OSError) -> None:
    """The default: a directory that vanished while walked has nothing to count."""


def walk_upper(upper: str, on_error: OnError = _ignore) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``upper`` as (path in the container, its lstat), depth first; an entry
    that cannot be stat'ed is skipped. Raises ``OSError`` when ``upper`` itself cannot be opened.
    Stop by leaving the loop: the descriptors still open are closed then."""
    stack = [("", os.open(upper, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))]
    try:
        while stack:
            rel, fd = stack.pop()
            try:
                yield from _entries(rel, fd, stack, on_error)
            finally:
                os.close(fd)
    finally:
        for _, fd in stack:
            os.close(fd)


def _entries(rel: str, fd: int, stack: list[tuple[str, int]], on_error: OnError) -> Iterator[tuple[str, os.stat_result]]:
    try:
        with os.scandir(fd) as it:
            children = list(it)
    except OSError as exc:
        on_error(rel or "/", "read", exc)
        return
    for child in children:
        try:
            st = os.stat(child.name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        path = f"{rel}/{child.name}"
        yield path, st
        if stat.S_ISDIR(st.st_mode):
            try:
                stack.append((path, os.open(child.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                            dir_fd=fd)))
            except OSError as exc:
                on_error(path, "open", exc)
