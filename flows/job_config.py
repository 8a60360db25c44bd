"""The job flow's parameters as one pydantic model.

One model, not loose arguments, so every entry point validates the same way: the CLI builds it
from flags, Python callers build it directly, and a Prefect deployment renders it as a typed form
whose server-side schema rejects bad values before a run starts. Field descriptions are what the
Prefect UI shows.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harnesses.registry import known_harnesses
from tasks_lib.job.records import OrderMode

_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class JobConfig(BaseModel):
    """What to run: which tasks, with which harnesses, how many times, how many at once."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(description="A task directory or a directory of task directories.")
    harnesses: list[str] = Field(default_factory=lambda: ["oracle"], min_length=1,
                                 description="Harnesses to run every task with.")
    model: str | None = Field(default=None, description="PROVIDER/MODEL for model harnesses.")
    concurrency: int = Field(default=1, ge=1, le=64, description="Trials running at once.")
    attempts: int = Field(default=1, ge=1, le=100, description="Trials per task and harness.")
    include: list[str] = Field(default_factory=list, description="Glob patterns of task names to run.")
    exclude: list[str] = Field(default_factory=list, description="Glob patterns of task names to skip.")
    n_tasks: int | None = Field(default=None, ge=1, description="Run only the first N tasks (by name).")
    jobs_dir: str = Field(default="jobs", description="Where job directories are written.")
    job_name: str | None = Field(default=None, description="Job directory name; default: a timestamp.")
    timeout_multiplier: float = Field(default=1.0, gt=0, le=100,
                                      description="Multiplies every task's agent and verifier timeout.")
    env_retries: int = Field(default=2, ge=0, le=10,
                             description="Retries of a trial after an environment failure (build, container, "
                                         "Docker API); agent and verifier outcomes are never retried.")
    rerun_invalid: Literal["all", "harness", "environment", "verifier"] | None = Field(
        default=None, description="Re-run recorded invalid trials (all, or of one kind); earlier tries are kept.")
    order: OrderMode = Field(default="expected",
                             description="Start order of the trials: expected (longest expected duration first: "
                                         "history, else task metadata, else agent timeout), name, or random.")
    order_seed: int | None = Field(default=None, ge=0, description="Seed of --order random (default: a new "
                                                                    "one, recorded in job.json).")
    force_new: bool = Field(default=False, description="If the job exists with another identity, start a new "
                                                       "job directory instead of refusing.")

    @field_validator("harnesses")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        known = known_harnesses()
        for name in names:
            if name not in known:
                raise ValueError(f"unknown harness {name!r}; known: {', '.join(sorted(known))}")
        if len(set(names)) != len(names):
            raise ValueError("a harness is listed twice")
        return names

    @field_validator("job_name")
    @classmethod
    def _safe_name(cls, v: str | None) -> str | None:
        if v is not None and not _JOB_NAME.match(v):
            raise ValueError("use letters, digits, '.', '_' or '-' (max 128), starting with a letter or digit")
        return v
