"""An exec whose stdout tbflow reads on the host while it polls the exec like a detached one.

Used for the verifier wrapper: its stdout is the channel that carries the verdict out of the
container (``verifier_witness``). The stream is read on a helper thread into memory; the caller
still decides when the command is over by polling ``exec_inspect`` (``Sandbox.wait``), so a
process that keeps the pipe open cannot hold the stage. Docker 20.10 closes an exec's stream about
2 s after its process exits even when another process still holds the pipe; ``finish`` waits up to
``GRACE_SEC`` for that, then shuts the socket down itself.
"""

from __future__ import annotations

import socket
import threading

from docker.utils.socket import frames_iter

from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.errors import ContainerError

GRACE_SEC = 5.0
#: more than any honest report (two capped reward files in hex plus a process listing)
MAX_BYTES = 4 * 1024 * 1024
STDOUT = 1


class ExecCapture:
    """A started exec and the stdout read from it so far. It starts in ``/`` (the agent may have
    removed the working directory); the command changes to the directory it needs itself."""

    def __init__(self, exec_id: str, sock) -> None:
        self.exec_id = exec_id
        self._sock = sock
        self._chunks: list[bytes] = []
        self._size = 0
        self.overflow = False
        self._reader = threading.Thread(target=self._read, name=f"exec-{exec_id[:12]}", daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, container: str, argv: list[str], stage: str, *, user: str = "",
              env: dict[str, str] | None = None) -> "ExecCapture":
        api = get_client().api
        try:
            exec_id = api.exec_create(container, argv, user=user, environment=env or None, stdin=False,
                                      stdout=True, stderr=True, workdir="/")["Id"]
            sock = api.exec_start(exec_id, socket=True)
        except DOCKER_ERRORS as exc:
            raise ContainerError(stage, f"could not start the command: {exc}") from exc
        return cls(exec_id, sock)

    def _read(self) -> None:
        try:
            for stream, data in frames_iter(self._sock, tty=False):
                if stream != STDOUT or not data:
                    continue
                if self._size + len(data) > MAX_BYTES:
                    self.overflow = True
                    break
                self._chunks.append(data)
                self._size += len(data)
        except (OSError, ValueError):
            pass  # the socket was shut down by ``finish``

    def finish(self, grace_sec: float = GRACE_SEC) -> bytes:
        """Everything the command wrote on stdout; call once its process has exited."""
        self._reader.join(grace_sec)
        raw = getattr(self._sock, "_sock", self._sock)
        try:
            raw.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._reader.join(1.0)
        try:
            self._sock.close()
        except OSError:
            pass
        return b"".join(self._chunks)
