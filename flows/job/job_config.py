"""The job flow's parameters: one pydantic model, and the same fields as flat flow parameters.

Every entry point validates the same way: the CLI builds a ``JobConfig`` from flags, Python
callers build it directly, and the Prefect deployment exposes the same fields as *flat*
parameters of ``job_flow`` (so ``prefect deployment run --param concurrency=4`` changes one field,
docs/deployments.md). Each field's type is declared once here, as an ``Annotated`` alias that
both the model and the flow signature use, and the job name carries its pattern, so Prefect's
OpenAPI schema makes the UI form and the server reject bad values before a run is created. Field
descriptions are what the Prefect UI shows.

Harness names are open (plug-ins, ``harnesses/registry.py``), so their type is a string with two
checks. ``JobConfig`` resolves every name (a bad one fails at config time naming ``harnesses``;
the CLI says ``--harness``). The deployment's schema, computed when ``prefect deploy`` runs, is
"one of the harnesses installed there (built-ins and entry points), or an import path
(``module:Class``, ``path/file.py:Class``)": the server refuses an unknown name before a run is
created, and an import path is resolved by the run before any container starts (a failure ends
it ``Refused`` with the same one line).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from flows.job.model_keys import KeySecrets, check_key_variables
from harnesses.plugins import DECLARED_PATTERN, IMPORT_PATTERN
from harnesses.registry import available_names, resolve_harness
from tasks_lib.errors import InputError
from tasks_lib.pricing.price_table import load_price_table
from tasks_lib.job.job_name_template import TEMPLATE_PATTERN, render_job_name
from tasks_lib.records.record_models import DEFAULT_MAX_LOG_MB, OrderMode
from tasks_lib.report.invalid_gate import parse_threshold

#: a jobs dir with credentials in a URL (``s3://KEY:SECRET@bucket``): refused by the server against the
#: schema, before a run (and its parameters) is stored. Only in the JSON schema: pydantic's regex engine
#: has no look-ahead; the run refuses the same URLs itself (``tasks_lib/store/remote_store.check_store``).
NO_CREDENTIALS_PATTERN = r"^(?!.*://[^/]*@)"


class HarnessNameSchema:
    """The JSON schema of a harness reference, built when a schema is asked for (``prefect deploy``),
    not at import: an installed name, or an import path."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict:
        return {"anyOf": [{"type": "string", "enum": available_names()},
                          {"type": "string", "pattern": IMPORT_PATTERN},
                          {"type": "string", "pattern": DECLARED_PATTERN}]}


#: a harness reference: a built-in or entry-point name, ``module:Class``, ``path/file.py:Class`` or ``path/file.toml``
HarnessName = Annotated[str, Field(min_length=1), HarnessNameSchema()]

Dataset = Annotated[str, Field(min_length=1, description=(
    "A task directory or a directory of task directories (a path on the machine that runs the job), or a dataset "
    "by name: name@version from the registry (no version: head, else the highest), org/name@ref a package dataset "
    "(dataset.toml)."))]
Registry = Annotated[Optional[str], Field(description=(
    "Where dataset names are looked up: a registry file in Harbor's format (path, file:// or http(s) URL), a store "
    "directory, or a git repository (for package datasets). Default: $TBFLOW_REGISTRY, else Harbor's registry."))]
AllowUnpinned = Annotated[bool, Field(description="Accept registry tasks pinned to a branch or tag instead of a full "
                                                  "commit SHA (the commit fetched is recorded).")]
Harnesses = Annotated[list[HarnessName], Field(min_length=1, description=(
    "Harnesses to run every task with: built-in or installed names, or module:Class / path/file.py:Class."))]
Model = Annotated[Optional[str], Field(description="PROVIDER/MODEL for model harnesses.")]
Concurrency = Annotated[int, Field(ge=1, le=64, description="Trials running at once.")]
Attempts = Annotated[int, Field(ge=1, le=100, description="Trials per task and harness.")]
Include = Annotated[list[str], Field(description="Glob patterns of task names to run.")]
Exclude = Annotated[list[str], Field(description="Glob patterns of task names to skip.")]
NTasks = Annotated[Optional[int], Field(ge=1, description="Run only the first N tasks (by name).")]
JobsDir = Annotated[str, Field(min_length=1, description=(
    "Where job directories are written; a relative path is taken from the working directory of the run. "
    "Or a store URL every worker reaches (s3://BUCKET/PREFIX): each worker works in a local copy and uploads "
    "records, logs and reports; credentials come from the worker's environment, never the URL."),
    json_schema_extra={"pattern": NO_CREDENTIALS_PATTERN})]
JobName = Annotated[Optional[str], Field(pattern=TEMPLATE_PATTERN, description=(
    "Job directory name: letters, digits, '.', '_' or '-' (max 128), starting with a letter or digit. "
    "An existing job of this name is continued. A template renders the run's scheduled start (UTC): "
    "{date} (2026-12-01) and {datetime} (2026-12-01T0300Z), e.g. nightly-{date} gives each night its own "
    "job. Default: a timestamp plus a random suffix."))]
TimeoutMultiplier = Annotated[float, Field(gt=0, le=100, description="Multiplies every task's agent and verifier "
                                                                      "timeout.")]
EnvRetries = Annotated[int, Field(ge=0, le=10, description="Retries of a trial after an environment failure (build, "
                                                           "container, Docker API); agent and verifier outcomes are "
                                                           "never retried.")]
MaxLogMb = Annotated[int, Field(ge=1, le=100_000, description="Each log file copied out of a trial container is "
                                                               "cut at this many MiB (the cut is noted in the "
                                                               "record and the report).")]
RerunInvalid = Annotated[Optional[Literal["all", "harness", "environment", "verifier"]], Field(
    description="Re-run recorded invalid trials (all, or of one kind); earlier tries are kept.")]
Shards = Annotated[int, Field(ge=0, le=64, description=(
    "Split the trials into this many flow runs of the trial deployment tbflow-trials/trials, run by the "
    "workers of its work pool (one job over many machines; jobs_dir must be on storage they all share: a shared "
    "path or a store URL). "
    "0: run every trial in this flow run."))]
ShardReruns = Annotated[int, Field(ge=0, le=10, description=(
    "With shards: how many times a shard whose flow run ended Crashed, Failed or Cancelled (its machine lost) "
    "is submitted again for its trials not yet recorded. Recorded trials never run again; a shard refused "
    "for bad input is not re-run. 0: never (run the job again instead)."))]
Order = Annotated[OrderMode, Field(description="Start order of the trials: expected (longest expected duration "
                                               "first: history, else task metadata, else agent timeout), name, "
                                               "or random.")]
FailOnInvalid = Annotated[Optional[str], Field(pattern=r"^(any|[0-9]+|[0-9]+(\.[0-9]+)?%)$", description=(
    "End the job run Failed (named 'Not all scored') when too many trials are invalid, ended by a tbflow error "
    "or have no record: 'any' (one is too many), 'N' (more than N) or 'P%' (more than P percent); the CLI's "
    "--fail-on-invalid. Within the threshold the run is Completed (named 'Not all scored'). Default (none): "
    "a run with such trials ends Failed, named with its counts, e.g. '2 invalid, 1 flagged' "
    "(TBFLOW_INVALID_JOB_STATE=completed on the worker keeps it Completed)."))]
OrderSeed = Annotated[Optional[int], Field(ge=0, description="Seed of order=random (default: a new one, recorded "
                                                             "in job.json).")]
Build = Annotated[bool, Field(description=(
    "Build every task's image from its environment/Dockerfile, even when [environment] docker_image names one "
    "(default: that image if present locally, else pulled, else built)."))]
VerbatimTestSh = Annotated[bool, Field(description=(
    "Run tests/test.sh verbatim (its own uv, Python, pytest and downloads, from the container: detection only) "
    "instead of tbflow's supplied runner, which runs the runner test.sh pins from a read-only mount."))]
RegradeFrom = Annotated[Optional[str], Field(description=(
    "Regrade: the directory of a finished job whose trials are judged again, without running any agent, by the "
    "dataset's current verifier in a fresh container fed with each trial's recorded artifacts (tasks with "
    "[verifier] environment_mode = \"separate\"; docs/running-jobs.md#regrade). Same trial ids and harnesses."))]
Prices = Annotated[Optional[str], Field(description=(
    "A model price table for the trials' costs (per step and per trial, in trajectory.json, the record and "
    "report.md): LiteLLM's model_prices_and_context_window.json format, JSON or TOML; its entries win over "
    "tbflow's pinned default table (docs/trajectories.md). A model priced in neither has an unknown cost."))]
ForceNew = Annotated[bool, Field(description="If the job exists with another identity, start a new job directory "
                                             "instead of refusing.")]


class JobConfig(BaseModel):
    """What to run: which tasks, with which harnesses, how many times, how many at once."""

    model_config = ConfigDict(extra="forbid")

    dataset: Dataset
    registry: Registry = None
    allow_unpinned: AllowUnpinned = False
    build: Build = False
    verbatim_test_sh: VerbatimTestSh = False
    regrade_from: RegradeFrom = None
    harnesses: Harnesses = Field(default_factory=lambda: ["oracle"])
    model: Model = None
    concurrency: Concurrency = 1
    attempts: Attempts = 1
    include: Include = Field(default_factory=list)
    exclude: Exclude = Field(default_factory=list)
    n_tasks: NTasks = None
    jobs_dir: JobsDir = "jobs"
    job_name: JobName = None
    timeout_multiplier: TimeoutMultiplier = 1.0
    env_retries: EnvRetries = 2
    max_log_mb: MaxLogMb = DEFAULT_MAX_LOG_MB
    rerun_invalid: RerunInvalid = None
    force_new: ForceNew = False
    shards: Shards = 0
    shard_reruns: ShardReruns = 2
    order: Order = "expected"
    order_seed: OrderSeed = None
    fail_on_invalid: FailOnInvalid = None
    key_secrets: KeySecrets = Field(default_factory=dict)
    prices: Prices = None

    @field_validator("prices")
    @classmethod
    def _a_price_table(cls, path: str | None) -> str | None:
        """Read now, so a bad table is refused before any trial runs, naming the file and the entry."""
        if path is not None:
            try:
                load_price_table(Path(path))
            except InputError as exc:
                raise ValueError(str(exc)) from None
            return str(Path(path).resolve())
        return path

    @field_validator("fail_on_invalid", mode="before")
    @classmethod
    def _a_threshold(cls, value: Any) -> Any:
        """The gate's own message for a bad threshold, and one spelling of a good one."""
        if not isinstance(value, str):
            return value
        try:
            t = parse_threshold(value)
        except InputError as exc:
            raise ValueError(exc.message) from None
        return str(int(t.value)) if t.kind == "count" and t.spelled != "any" else t.spelled

    @field_validator("key_secrets")
    @classmethod
    def _model_keys_only(cls, key_secrets: dict[str, str]) -> dict[str, str]:
        return check_key_variables(key_secrets)

    @field_validator("harnesses")
    @classmethod
    def _resolvable_once(cls, names: list[str]) -> list[str]:
        """Every reference names a harness, and no two name the same one (their keys key the trials)."""
        keys: dict[str, str] = {}
        for ref in names:
            try:
                key = resolve_harness(ref).key
            except InputError as exc:
                raise ValueError(exc.message) from None
            if key in keys:
                raise ValueError(f"a harness is listed twice: {keys[key]!r} and {ref!r} are both {key!r}"
                                 if keys[key] != ref else "a harness is listed twice")
            keys[key] = ref
        return names

    @field_validator("job_name")
    @classmethod
    def _rendered(cls, name: Optional[str]) -> Optional[str]:
        """A template that reaches the config unrendered (``tbflow run --job-name 'nightly-{date}'``, a
        Python caller) is rendered from now; the job flow renders it from its scheduled start first."""
        from datetime import datetime, timezone

        try:
            return render_job_name(name, datetime.now(timezone.utc))
        except InputError as exc:
            raise ValueError(exc.message) from None

    @classmethod
    def args_docstring(cls) -> str:
        """A Google-style ``Args:`` section of every field's description: Prefect reads flow parameter
        descriptions (shown in the UI form) only from the flow function's docstring."""
        lines = ["", "Args:"] + [f"    {name}: {f.description}" for name, f in cls.model_fields.items()
                                 if f.description]
        return "\n".join(lines) + "\n"

    def flow_parameters(self) -> dict:
        """The flat parameters of ``job_flow`` for this config."""
        return self.model_dump()


#: CLI flags whose parameter is not the flag's name with ``_`` for ``-``
_FLAG_PARAMETER = {"harness": "harnesses"}
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


def in_parameter_terms(text: str) -> str:
    """``text`` with every CLI flag of a job field named as the flow parameter instead.

    Refusals are written once, in the CLI's terms (``--model``, ``--jobs-dir``); a deployment's
    user sets parameters, so the flow's Refused state and log say ``parameter model``,
    ``parameter jobs_dir``. Flags of no job field (``--output``) are left as they are.
    """
    def name(m: re.Match) -> str:
        field = _FLAG_PARAMETER.get(m.group(1), m.group(1).replace("-", "_"))
        return f"parameter {field}" if field in JobConfig.model_fields else m.group(0)

    return _FLAG.sub(name, text)
