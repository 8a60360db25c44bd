"""The per-trial bounds every container tbflow creates is started with (docs/judge.md, docs/limits.md).

An agent runs as root in its container; whatever it can grow there from inside must be bounded
per trial, so that it stays the agent's result and never becomes the host's or another trial's
problem:

* **processes**: a pids limit (``TBFLOW_PIDS_LIMIT``; the host's pid space is shared);
* **the container log**: none at all. tbflow never reads a container's log (its commands report
  through exec streams and files), and with the default ``json-file`` driver ``yes > /proc/1/fd/1``
  grows ``/var/lib/docker/containers/<id>/<id>-json.log`` on the host without limit, outside the
  writable layer tbflow measures, until the host's disk is full;
* **the writable layer**: ``[environment] storage_mb`` as the engine's own quota
  (``--storage-opt size=``) where the storage driver has one; everywhere else ``storage_watch``
  bounds it during the agent stage.
"""

from __future__ import annotations

import os
from functools import lru_cache

from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client

#: every trial container's pids limit: one agent's fork bomb must not starve the others or tbflow.
#: ``TBFLOW_PIDS_LIMIT`` overrides it; 0 means none.
DEFAULT_PIDS_LIMIT = 4096
#: no container log: nothing reads it, and its size would be the agent's to choose
LOG_CONFIG = {"type": "none", "config": {}}
#: storage drivers whose ``size`` option is a real quota on the writable layer (overlay2 only on
#: xfs mounted with ``pquota``, which ``docker info`` cannot tell: tried, and dropped if refused)
QUOTA_DRIVERS = ("btrfs", "zfs", "devicemapper", "windowsfilter")


def pids_limit() -> int | None:
    raw = os.environ.get("TBFLOW_PIDS_LIMIT", "").strip()
    value = int(raw) if raw.isdigit() else DEFAULT_PIDS_LIMIT
    return value or None


def quota_possible(driver: str, driver_status: list[list[str]] | None) -> bool:
    """Whether the engine's storage driver may enforce ``--storage-opt size=`` (pure)."""
    if driver in QUOTA_DRIVERS:
        return True
    backing = dict((row[0], row[1]) for row in driver_status or [] if len(row) == 2).get("Backing Filesystem")
    return driver == "overlay2" and backing == "xfs"


@lru_cache(maxsize=1)
def engine_quota_possible() -> bool:
    """``quota_possible`` for this process's engine (asked once; an engine that does not answer
    counts as without quotas: the watch then bounds the layer)."""
    try:
        info = get_client().api.info()
    except DOCKER_ERRORS:
        return False
    return quota_possible(str(info.get("Driver", "")), info.get("DriverStatus"))


def host_limits(storage_mb: int | None, quota: bool) -> dict:
    """The host-config bounds of one trial container (pure): pids, no log, and the storage quota
    when ``quota`` (the engine may enforce it)."""
    host: dict = {"log_config": LOG_CONFIG}
    if limit := pids_limit():
        host["pids_limit"] = limit
    if storage_mb and quota:
        host["storage_opt"] = {"size": f"{storage_mb}M"}
    return host


def quota_refused(exc: BaseException) -> bool:
    """The engine refused the storage quota (overlay2 on xfs without ``pquota``, …): create again
    without it, the watch bounds the layer."""
    return "storage-opt" in str(exc) or "storage opt" in str(exc).lower()
