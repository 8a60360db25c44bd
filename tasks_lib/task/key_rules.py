"""What tbflow does with every key of Harbor 0.26's ``task.toml``: honour it or refuse it by name.

A task in the current Harbor format may ask for things tbflow does not do yet (a separate
verifier container, sidecars, steps, an egress allowlist). Parsing such a key and dropping it runs
the task as something else, and the score then looks like the agent's: a correct oracle scores 0
when its sidecar is missing, a ``no-network`` task runs on the open network. So every key of
Harbor's schema has exactly one row here, and ``key_check`` walks a task's TOML against it:

- ``HONOURED``: tbflow acts on the key as Harbor does (or the key only describes the task).
- a ``Refuse`` row: any value other than the neutral one (absent, empty, the default) refuses the
  task with the row's reason, naming the key; the subtree under it is covered by the same row.
- a ``Check`` row: a function of the value (and the whole table) says which values are honoured.
- ``FREE``: a free-form table (``[metadata]``, the ``env`` tables' names): nothing below is a key.

Keys in neither Harbor's schema nor this table are *reported* to the user (``key_check``), never
kept silently. ``tests/test_every_harbor_task_key_is_honoured_or_refused.py`` walks Harbor's own
models against this table, so a Harbor release with a new key fails a test before it changes a
user's numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Harbor's template form for values taken from the host's environment (``harbor.utils.env``)
_HOST_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")
NETWORK_MODES = ("public", "no-network", "allowlist")


@dataclass(frozen=True)
class Honoured:
    """tbflow acts on the key as Harbor does; ``free`` means the keys below it are data, not schema."""

    free: bool = False


@dataclass(frozen=True)
class Refuse:
    """Refused unless neutral (absent, ``false``, ``0``, empty, or one of ``allowed``)."""

    why: str
    allowed: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Check:
    """``judge(value, whole_toml)`` returns why the value cannot be honoured, or None."""

    judge: Callable[[Any, dict], str | None]


Rule = Honoured | Refuse | Check
HONOURED = Honoured()
FREE = Honoured(free=True)


def baseline_network(raw: dict) -> str:
    """The task's baseline policy as Harbor resolves it: ``network_mode``, else the legacy
    ``allow_internet = false`` as ``no-network``, else ``public``."""
    env = raw.get("environment")
    if not isinstance(env, dict):
        return "public"
    mode = env.get("network_mode")
    if isinstance(mode, str):
        return mode
    return "no-network" if env.get("allow_internet") is False else "public"


def _baseline_mode(value: Any, raw: dict) -> str | None:
    if value not in NETWORK_MODES:
        return f"= {value!r}: not one of {', '.join(NETWORK_MODES)}"
    if value == "allowlist":
        return ('= "allowlist": an egress allowlist needs a filtering proxy between the container '
                "and the network, which tbflow does not run yet")
    return None


def _phase_mode(value: Any, raw: dict) -> str | None:
    if value not in NETWORK_MODES:
        return f"= {value!r}: not one of {', '.join(NETWORK_MODES)}"
    base = baseline_network(raw)
    if value != base:
        return (f"= {value!r} while the environment is {base!r}: tbflow cannot change a running "
                "container's network policy between the agent and the verifier yet")
    return None


def _linux_only(value: Any, raw: dict) -> str | None:
    if isinstance(value, str) and value.lower() == "linux":
        return None
    return f"= {value!r}: tbflow runs Linux containers only"


def _no_host_templates(value: Any, raw: dict) -> str | None:
    """Harbor fills ``${VAR}`` / ``${VAR:-default}`` values from the host's environment."""
    if not isinstance(value, dict):
        return None  # the model names the wrong type
    templated = sorted(k for k, v in value.items() if isinstance(v, str) and _HOST_TEMPLATE.fullmatch(v))
    if templated:
        return (f"{', '.join(templated)} take a value from the host's environment (${{VAR}}); tbflow "
                "passes no host variable into a trial, so the task would see the literal text")
    return None


def _root_only(value: Any, raw: dict) -> str | None:
    if value in ("root", 0, "0"):
        return None
    return f"= {value!r}: tbflow runs this phase as root; another user is not supported yet"


def _step_strategy(value: Any, raw: dict) -> str | None:
    """Only multi-step tasks use it, and ``steps`` is refused on its own row."""
    return None if value in ("mean", "final") else f"= {value!r}: not 'mean' or 'final'"


def _schema_version(value: Any, raw: dict) -> str | None:
    if isinstance(value, str | int | float) and str(value).split(".")[0] == "1":
        return None
    return f"= {value!r}: tbflow reads task schema 1.x (Harbor 0.26 writes 1.4)"


_VERIFIER_ENV = ("a verifier environment of its own (image, resources, policy) is not supported yet; "
                 "environment_mode = \"separate\" alone runs test.sh in a fresh container of the task's own "
                 "environment")
_SIDECAR = "names a compose service other than main; " + "compose services (sidecars) are not supported yet"


def _main_service(value: Any, raw: dict) -> str | None:
    return None if value in (None, "", "main") else f"= {value!r}: {_SIDECAR}"


def _artifact_entries(value: Any, raw: dict) -> str | None:
    """Entries from ``main`` are honoured (a string is one); the walk does not enter lists, so the
    ``service`` of each table is checked here."""
    if not isinstance(value, list):
        return None  # the model names the wrong type
    for entry in value:
        why = _main_service(entry.get("service"), raw) if isinstance(entry, dict) else None
        if why:
            return f"service {why}"
    return None


def _collect_hooks(value: Any, raw: dict) -> str | None:
    """Hooks in ``main`` are honoured; a hook in a sidecar cannot be (no sidecars)."""
    if not isinstance(value, list):
        return None  # the model names the wrong type
    services = sorted({str(h.get("service")) for h in value if isinstance(h, dict) and h.get("service") not in
                       (None, "main")})
    return f"service = {services[0]!r}: {_SIDECAR}" if services else None
_COMPOSE = "compose services (sidecars) are not supported yet"

#: every key path of Harbor 0.26's TaskConfig ("a.b", "a[].b" for lists of tables), plus the
#: legacy aliases tbflow maps (``version``, ``memory``, ``storage``)
RULES: dict[str, Rule] = {
    "schema_version": Check(_schema_version),
    "version": Check(_schema_version),  # TB 2.0's name for schema_version
    "source": HONOURED,  # describes where the task came from
    "task": HONOURED,
    "task.name": HONOURED,
    "task.version": HONOURED,
    "task.description": HONOURED,
    "task.authors": FREE,
    "task.keywords": HONOURED,
    "metadata": FREE,
    "agent": HONOURED,
    "agent.timeout_sec": HONOURED,
    "agent.user": Check(_root_only),
    "agent.network_mode": Check(_phase_mode),
    "agent.allowed_hosts": Refuse("an egress allowlist is not supported yet"),
    "verifier": HONOURED,
    "verifier.timeout_sec": HONOURED,
    "verifier.env": Check(_no_host_templates),
    "verifier.user": Check(_root_only),
    "verifier.network_mode": Check(_phase_mode),
    "verifier.allowed_hosts": Refuse("an egress allowlist is not supported yet"),
    "verifier.environment_mode": HONOURED,  # "shared" or "separate" (the model checks the value)
    "verifier.environment": Refuse(_VERIFIER_ENV),
    "verifier.collect": Check(_collect_hooks),
    "environment": HONOURED,
    "environment.build_timeout_sec": HONOURED,
    "environment.docker_image": HONOURED,
    "environment.os": Check(_linux_only),
    "environment.cpus": HONOURED,
    "environment.memory_mb": HONOURED,
    "environment.memory": HONOURED,  # legacy "2G" form of memory_mb
    "environment.storage_mb": HONOURED,
    "environment.storage": HONOURED,  # legacy "10G" form of storage_mb
    "environment.gpus": Refuse("tbflow runs tasks on CPU only; a GPU request cannot be honoured"),
    "environment.gpu_types": Refuse("tbflow runs tasks on CPU only; GPU types cannot be honoured"),
    "environment.tpu": Refuse("TPUs cannot be attached on a Docker engine"),
    "environment.mcp_servers": Refuse("MCP servers are not passed to agents yet; " + _COMPOSE),
    "environment.env": Check(_no_host_templates),
    "environment.skills_dir": Refuse("skills are not copied into the agents' configuration yet"),
    "environment.healthcheck": HONOURED,  # run before the agent starts (tasks_lib/trial/healthcheck.py)
    "environment.healthcheck.command": HONOURED,
    "environment.healthcheck.interval_sec": HONOURED,
    "environment.healthcheck.timeout_sec": HONOURED,
    "environment.healthcheck.start_period_sec": HONOURED,
    "environment.healthcheck.start_interval_sec": HONOURED,
    "environment.healthcheck.retries": HONOURED,
    "environment.workdir": HONOURED,
    "environment.allow_internet": HONOURED,  # false is the no-network policy
    "environment.network_mode": Check(_baseline_mode),
    "environment.allowed_hosts": Refuse("an egress allowlist is not supported yet"),
    "solution": HONOURED,
    "solution.env": Check(_no_host_templates),
    "multi_step_reward_strategy": Check(_step_strategy),
    "steps": Refuse("multi-step tasks are not supported yet; one step's run would be scored as the task"),
    "artifacts": Check(_artifact_entries),
    "artifacts[].source": HONOURED,
    "artifacts[].destination": HONOURED,
    "artifacts[].exclude": HONOURED,
    "artifacts[].service": Check(_main_service),
}

#: rows that are not keys of Harbor 0.26's schema: aliases its validators map before parsing
LEGACY_ALIASES = frozenset({"version", "environment.memory", "environment.storage"})


def rule_for(path: str) -> tuple[str, Rule] | None:
    """The row that covers ``path``: its own, or the nearest ancestor that is refused or free."""
    if path in RULES:
        return path, RULES[path]
    parts = path.split(".")
    for n in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:n])
        row = RULES.get(head) or RULES.get(head.removesuffix("[]"))
        if isinstance(row, Refuse) or (isinstance(row, Honoured) and row.free):
            return head.removesuffix("[]"), row
    return None
