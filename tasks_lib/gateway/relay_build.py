"""Build the in-container relay (``tbflow-relay``) once per source version, on the host.

The relay ships as one ``gcc -static`` binary that runs in any x86_64 Linux image, cached under
``<cache dir>/relay/<sha256 of relay.c>/tbflow-relay`` (``tasks_lib/cache_dir.py``); the
``<sha>/`` directory holds only the finished binary, so it can be uploaded as a whole. Compiling,
caching and atomic replacement are ``tasks_lib/container/static_build.py``'s.
"""

from __future__ import annotations

from pathlib import Path

from tasks_lib.container.static_build import StaticBuildError, ensure_static_binary, sources_digest

RELAY_SOURCE = Path(__file__).resolve().parent / "relay" / "relay.c"
RELAY_NAME = "tbflow-relay"
#: Where tbflow puts the relay inside a trial container, and where the gateway socket's
#: directory is mounted (read-only). Harness-owned paths under /opt/tbflow (DESIGN §6).
RELAY_CONTAINER_DIR = "/opt/tbflow/relay"
GATEWAY_CONTAINER_DIR = "/opt/tbflow/gateway"

#: The relay could not be compiled on the host (the host's setup, not one trial's failure).
RelayBuildError = StaticBuildError


def source_digest(source: Path = RELAY_SOURCE) -> str:
    return sources_digest([source])


def ensure_relay_binary(cache_dir: Path | None = None, source: Path = RELAY_SOURCE) -> Path:
    """Return the path of a static ``tbflow-relay`` built from ``source``, compiling it if needed."""
    return ensure_static_binary("relay", RELAY_NAME, [source], cache_dir)
