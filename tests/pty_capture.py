"""Run a command on a pseudo-terminal of its own and keep every byte it wrote there (stdout and
stderr both, ANSI escapes included), as a user's terminal would have received them."""

from __future__ import annotations

import errno
import fcntl
import os
import select
import struct
import subprocess
import termios

COLUMNS, LINES = 120, 40


def run_in_pty(argv: list[str], env: dict[str, str], cwd: str, timeout: float = 120.0) -> tuple[int, bytes]:
    """(exit code, bytes written to the terminal) of ``argv`` with fds 0-2 on a new pty of
    ``COLUMNS`` x ``LINES``; read until every holder of the terminal closed it (EIO)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("4H", LINES, COLUMNS, 0, 0))
    try:
        proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                start_new_session=True)
    finally:
        os.close(slave)
    out = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            assert ready, f"no output from {argv} for {timeout:.0f} s; so far: {bytes(out)!r}"
            try:
                chunk = os.read(master, 65536)
            except OSError as exc:  # Linux: EIO once no process holds the terminal any more
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            out += chunk
        return proc.wait(timeout=timeout), bytes(out)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
