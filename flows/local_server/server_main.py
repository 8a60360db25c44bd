"""The local server process of one tbflow command: its Prefect server and its guard.

Run as ``python -m flows.local_server.server_main`` by flows/local_server/command_server.py, in a
session of its own (a terminal's Ctrl-C never reaches it before the command has finished
stopping), with its output in ``PREFECT_HOME/tbflow-server.log``. Two things come from the
command that starts it, as a child inherits them, never over a named socket:

- stdin: the guard pipe (flows/local_server/guard.py). ``dir JOB_DIR`` lines name the job dirs
  the command runs, ``bye`` says it stopped cleanly. At EOF without ``bye`` (the command was
  killed, even with ``kill -9``: the kernel closes the pipe) the containers of those job dirs are
  removed. At EOF the process stops: nothing of a command outlives it.
- ``--serve FD``: a listening TCP socket on 127.0.0.1 the command bound (so the command knows
  the API URL at once). Prefect's API is served on it, with the settings of
  flows/local_server/prefect_settings.py ``SERVER_ENV`` in the environment. Without it (the
  command uses a configured ``PREFECT_API_URL``) the process is only the guard.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

from flows.local_server.guard import Guard

#: a stuck shutdown must not keep the process alive: its command is gone when this matters
HARD_EXIT_AFTER_SEC = 20.0


def prefect_app_server():  # noqa: ANN201 - a uvicorn.Server; uvicorn is imported only here
    """Prefect's server app as uvicorn runs it for ``prefect server start`` (the API only)."""
    import uvicorn

    from flows.process_heap import freeze_imported

    config = uvicorn.Config("prefect.server.api.server:create_app", factory=True, log_level="error",
                            lifespan="on")
    config.load()  # imports the server's code now, so that its objects can be frozen (flows/process_heap.py)
    freeze_imported()
    return uvicorn.Server(config)


def guard_until_eof(guard: Guard) -> None:
    guard.read_pipe()
    if guard.tbflow_died():
        guard.reap()


def main(argv: list[str]) -> int:
    guard = Guard(sys.stdin)
    if argv[1:2] != ["--serve"]:
        print(f"tbflow guard {os.getpid()}: for {os.environ.get('PREFECT_API_URL')}", flush=True)
        guard_until_eof(guard)
        return 0
    tcp = socket.socket(fileno=int(argv[2]))  # ``pass_fds`` keeps the number
    api_url = f"http://127.0.0.1:{tcp.getsockname()[1]}/api"
    os.environ["PREFECT_API_URL"] = api_url
    print(f"tbflow server {os.getpid()}: {api_url}", flush=True)
    server = prefect_app_server()

    def stop_at_eof() -> None:
        guard_until_eof(guard)
        server.should_exit = True
        threading.Timer(HARD_EXIT_AFTER_SEC, os._exit, (1,)).start()

    threading.Thread(target=stop_at_eof, name="tbflow-guard", daemon=True).start()
    server.run(sockets=[tcp])
    print(f"tbflow server {os.getpid()}: stopped", flush=True)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
