"""Pydantic models of a Terminal-Bench task (``task.toml`` and the files around it).

Both schema markers are accepted: TB 2.0's ``version = "1.0"`` and later ``schema_version``
(Harbor 0.26 writes ``"1.4"``). What a key *asks for* is judged before these models are built
(``key_check`` against ``key_rules``: honoured or refused by name, unknown keys reported), so the
models only carry what tbflow acts on, and are strict about those values: a wrong type or a
negative timeout names the file and the field, because running a task under other limits than it
asks for would make its score meaningless.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_LENIENT = ConfigDict(extra="allow")


class TaskInfo(BaseModel):
    """TB 2.1 ``[task]``: registry identity."""

    model_config = _LENIENT
    name: str | None = None
    description: str | None = None
    keywords: list[str] = Field(default_factory=list)


class AgentConfig(BaseModel):
    model_config = _LENIENT
    timeout_sec: float = Field(default=600.0, gt=0)


class CollectHook(BaseModel):
    """``[[verifier.collect]]``: a command run in the agent's container after the agent phase, to
    snapshot state into files an ``artifacts`` entry then collects (Harbor runs it with ``sh -c``,
    best effort: a failing hook is recorded, never fatal)."""

    model_config = _LENIENT
    command: str
    service: str = "main"
    timeout_sec: float = Field(default=60.0, gt=0)
    user: str | int | None = None


class ArtifactSpec(BaseModel):
    """An ``artifacts`` entry: a path in the agent's container copied out after the agent phase,
    kept in the trial's ``artifacts/`` and, for a separate verifier, put back at ``source`` in the
    verifier's fresh container. A plain string is ``source`` alone."""

    model_config = _LENIENT
    source: str
    destination: str | None = None
    exclude: list[str] = Field(default_factory=list)
    service: str | None = None

    @field_validator("source")
    @classmethod
    def _no_parent_parts(cls, value: str) -> str:
        if not value or ".." in value.split("/"):
            raise ValueError(f"an artifact source must be a path without '..' parts, got {value!r}")
        return value

    @field_validator("destination")
    @classmethod
    def _relative_destination(cls, value: str | None) -> str | None:
        """Harbor's rules: relative, forward slashes, no '..', never the manifest's own name."""
        if not value:
            return None
        if value.startswith("/") or "\\" in value or ".." in value.split("/") or value.rstrip("/") == "manifest.json":
            raise ValueError(f"an artifact destination must be a relative path inside artifacts/ "
                             f"(not manifest.json), got {value!r}")
        return value


class HealthcheckConfig(BaseModel):
    """``[environment.healthcheck]``: Docker HEALTHCHECK's options, as Harbor runs them before the
    agent starts (``tasks_lib/trial/healthcheck.py``)."""

    model_config = _LENIENT
    command: str
    interval_sec: float = Field(default=5.0, ge=0)
    timeout_sec: float = Field(default=30.0, gt=0)
    start_period_sec: float = Field(default=0.0, ge=0)
    start_interval_sec: float = Field(default=5.0, ge=0)
    retries: int = Field(default=3, ge=1)


class VerifierConfig(BaseModel):
    model_config = _LENIENT
    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | None = None
    #: "separate": test.sh runs in a fresh container of the task's environment that receives only
    #: the collected artifacts (Harbor's ``environment_mode``); None/"shared": in the agent's
    environment_mode: Literal["shared", "separate"] | None = None
    collect: list[CollectHook] = Field(default_factory=list)


class SolutionConfig(BaseModel):
    model_config = _LENIENT
    env: dict[str, str] = Field(default_factory=dict)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_MB_PER_UNIT = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def _size_to_mb(value: str) -> int:
    """``"2G"`` → 2048. Legacy ``memory``/``storage`` keys use this form."""
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"not a size like '2G' or '512M': {value!r}")
    return int(float(m.group(1)) * _MB_PER_UNIT[m.group(2).upper()])


class EnvironmentConfig(BaseModel):
    model_config = _LENIENT
    build_timeout_sec: float = Field(default=600.0, gt=0)
    docker_image: str | None = None
    cpus: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    gpus: int = Field(default=0, ge=0)
    allow_internet: bool = True
    #: Harbor's baseline policy; ``no-network`` is TB 2.x's ``allow_internet = false`` (key_rules
    #: refuses ``allowlist``). When set it decides, as in Harbor.
    network_mode: Literal["public", "no-network", "allowlist"] | None = None
    workdir: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    healthcheck: HealthcheckConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_sizes(cls, data: Any) -> Any:
        """Map the deprecated ``memory = "2G"`` / ``storage = "10G"`` aliases."""
        if isinstance(data, dict):
            data = dict(data)
            for legacy, field in (("memory", "memory_mb"), ("storage", "storage_mb")):
                if legacy in data and field not in data:
                    raw = data.pop(legacy)
                    data[field] = _size_to_mb(raw) if isinstance(raw, str) else raw
        return data

    @model_validator(mode="after")
    def _network_policy(self) -> "EnvironmentConfig":
        """``network_mode``, when the task sets it, overrides the legacy ``allow_internet``."""
        if self.network_mode is not None:
            self.allow_internet = self.network_mode == "public"
        return self

    @field_validator("workdir")
    @classmethod
    def _absolute_workdir(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith("/"):
            raise ValueError(f"must be an absolute path, got {v!r}")
        return v


class TaskConfig(BaseModel):
    """The whole ``task.toml``."""

    model_config = _LENIENT
    schema_version: str = "1.0"
    task: TaskInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    solution: SolutionConfig = Field(default_factory=SolutionConfig)
    artifacts: list[ArtifactSpec] = Field(default_factory=list)

    @field_validator("artifacts", mode="before")
    @classmethod
    def _string_entries(cls, value: Any) -> Any:
        """``artifacts = ["/app/out"]`` is Harbor's short form of ``{source = "/app/out"}``."""
        if isinstance(value, list):
            return [{"source": v} if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="before")
    @classmethod
    def _version_marker(cls, data: Any) -> Any:
        """TB 2.0 writes ``version``; 2.1 and newer Harbor write ``schema_version``."""
        if isinstance(data, dict) and "schema_version" not in data and "version" in data:
            data = dict(data)
            data["schema_version"] = str(data.pop("version"))
        return data


class Task(BaseModel):
    """A loaded task directory: its config plus what tbflow needs from the files."""

    name: str
    path: Path
    config: TaskConfig
    instruction: str
    has_solution: bool
    #: keys of task.toml that neither Harbor's schema nor tbflow knows (shown and recorded, never used)
    notes: list[str] = Field(default_factory=list)

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

    def built_from_context(self) -> "Task":
        """This task with ``[environment] docker_image`` dropped, so its image is built from
        ``environment/`` (``--build``); a task without a Dockerfile then fails its build-image."""
        env = self.config.environment.model_copy(update={"docker_image": None})
        return self.model_copy(update={"config": self.config.model_copy(update={"environment": env})})

    @property
    def separate_verifier(self) -> bool:
        """test.sh runs in a fresh container fed only with the artifacts (Harbor's separate mode)."""
        return self.config.verifier.environment_mode == "separate"

    @property
    def collects(self) -> bool:
        """Anything to collect from the agent's container after the agent phase."""
        return self.separate_verifier or bool(self.config.artifacts or self.config.verifier.collect)

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.path / "solution"
