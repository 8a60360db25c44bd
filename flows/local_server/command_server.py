"""The Prefect server of a tbflow command: attached to at once, before Prefect is imported.

Prefect's own "ephemeral" mode starts its server lazily, at the first flow run (so its 5–13 s
start-up comes after planning instead of next to it), in tbflow's process group (so a terminal's
Ctrl-C kills it before tbflow has finished stopping, and every buffered event then fails with a
ConnectError traceback), and stops it only from ``atexit`` (so ``kill -9`` of tbflow leaves a
200 MB server running for good, holding the SQLite database).

``start()`` instead attaches the command to tbflow's one local server process
(flows/local_server/warm_server.py), starting it in a session of its own when none runs, and points
``PREFECT_API_URL`` at it before Prefect is imported, so Prefect never starts its own. Planning,
the Docker preflight and the imports run while the server starts; ``wait_ready()`` blocks only
right before the flow run. The connection is the command's guard for its whole life (docs/prefect.md
and docs/running-jobs.md, "Stopping"). With ``PREFECT_API_URL`` already set, that server is used, and the
command attaches to a guard of its own that starts no Prefect server.
"""

from __future__ import annotations

import atexit
import os
import sys

from flows.local_server import warm_server
from flows.local_server.prefect_settings import SERVER_ENV
from flows.local_server.socket_peer import UntrustedPeer
from flows.local_server.warm_server import SharedServer

_current: SharedServer | None = None


def current() -> SharedServer | None:
    return _current


def start() -> SharedServer:
    """Attach this command to the local server (``TBFLOW_SERVER_IDLE_SEC``: how long it waits for
    the next command; 0 stops it with this one), or to a guard when ``PREFECT_API_URL`` is set."""
    global _current
    if _current is None:
        configured = os.environ.get("PREFECT_API_URL")
        try:
            _current = warm_server.attach(warm_server.idle_sec(), SERVER_ENV, configured)
        except UntrustedPeer as exc:  # said once, as it may be an attack (flows/local_server/socket_peer.py)
            print(f"tbflow: warning: {exc}; this command starts a Prefect server of its own", file=sys.stderr,
                  flush=True)
            _current = warm_server.attach(0, SERVER_ENV, configured, private=True)
        # Registered before Prefect is imported, so it runs after Prefect's own atexit handlers
        # (LIFO): buffered events and logs reach the server before the command detaches.
        atexit.register(_current.stop)
    return _current
