"""Persisted records: what a trial and a job leave on disk.

These models are the contract between the runner, the job store and the reports. A
``TrialRecord`` is written only for a trial that finished (scored or invalid); an interrupted
trial leaves none, so resume re-runs it. Paths inside records are relative to the trial
directory, so a job directory can be moved or archived and still be read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from tasks_lib.container.container_outcomes import LogsOutcome, ProcessInfo
from tasks_lib.dataset.dataset_models import DatasetSource
from tasks_lib.records.artifact_record import ArtifactEntry, CollectRun
from tasks_lib.gateway.gateway_usage import GatewayUsage
from tasks_lib.records.harness_source import HarnessSource
from tasks_lib.records.job_identity import JobIdentity
from tasks_lib.text_clean import ContainerText

RECORD_SCHEMA_VERSION = 1

InvalidKind = Literal["harness", "environment", "verifier", "interrupted"]
HarnessKind = Literal["reference", "model"]
#: default cap of one log file copied out of a trial container (``--max-log-mb`` 50)
DEFAULT_MAX_LOG_MB = 50
DEFAULT_MAX_LOG_BYTES = DEFAULT_MAX_LOG_MB * 1024 * 1024


class Usage(BaseModel):
    """Model usage reported by a harness. ``cost_usd`` is None when unknown, never a made-up 0."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class VerifierRunner(BaseModel):
    """Which runner ran (or will run) the task's tests, and why (docs/judge.md, "The runner").

    ``tbflow``: tbflow's supplied runner (an interpreter and the wheels test.sh pins, prepared on
    the host, verified by hash, on a read-only mount), started by the judge in place of test.sh's
    prologue; nothing the agent left in the container can change what runs the tests. ``container``:
    test.sh verbatim with whatever the container holds (detection only; ``why`` says why)."""

    source: Literal["tbflow", "container"]
    why: str
    #: what the judge can promise about the runner: ``prevented`` (tbflow's, nothing the agent left
    #: is read) or ``detection only`` (the container's: changes are detected, failing closed)
    assurance: Literal["prevented", "detection only"] = "detection only"
    python: str | None = None
    #: sha256 of the runner's manifest (every file and mode under its mount)
    digest: str | None = None
    #: every distribution installed in it, ``name==version sha256:...``
    lock: list[str] = Field(default_factory=list)
    #: the command the judge starts, and what test.sh writes for its exit status
    argv: list[str] = Field(default_factory=list)
    cwd: str | None = None
    #: test.sh refuses to run from / (it writes no reward then): the judge runs it verbatim there
    checks_workdir: bool = False
    reward_path: str = "/logs/verifier/reward.txt"
    on_pass: str = "1"
    on_fail: str = "0"
    #: the runner's directory on this host (mounted read-only), not part of the record
    host_dir: str | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _assurance_follows_the_source(self) -> "VerifierRunner":
        """The assurance is the source's, never set apart from it."""
        self.assurance = "prevented" if self.source == "tbflow" else "detection only"
        return self


class ImageOutcome(BaseModel):
    """What build-image did for this trial."""

    tag: str
    source: Literal["built", "reused", "docker_image"]
    build_log: str | None = None
    duration_sec: float = 0.0
    #: built by the job's build lane before the trial started (``duration_sec`` is that build's,
    #: not time the trial spent), so a cold image did not hold a trial slot
    ahead: bool = False
    #: the verifier's runner prepared with the image (None: not chosen yet, a record of an older tbflow)
    runner: VerifierRunner | None = None


class StorageCount(BaseModel):
    """The task's ``storage_mb`` and what the agent's writable layer held against it
    (tasks_lib/trial/storage_watch.py, docs/limits.md)."""

    storage_mb: int
    #: who held the bound: the engine's quota, tbflow's watch, or nobody (``problem`` says why)
    held_by: Literal["engine-quota", "watch", "none"]
    #: allocated bytes of the writable layer at the last walk (at the stop, or when the agent ended)
    used_bytes: int | None = None
    entries: int | None = None
    exceeded: bool = False
    problem: str | None = None


class AgentOutcome(BaseModel):
    """What run-agent observed. A timeout is an outcome, not an error."""

    exit_code: int | None = None
    #: what the harness says ``exit_code`` means when it declares it (``semantic_exit_codes``, a
    #: declarative file's ``[exit_codes]``), e.g. "incomplete": a deliberate stop, still scored
    exit_meaning: str | None = None
    timed_out: bool = False
    timeout_sec: float
    duration_sec: float
    usage: Usage | None = None
    stdout_log: str | None = None
    stderr_log: str | None = None
    #: the harness's own error line from its log (e.g. a 401), for the reason of an invalid trial
    error_line: str | None = None
    #: what tbflow's model gateway counted for the trial: the second witness next to ``usage``
    gateway_usage: GatewayUsage | None = None
    #: set when the CLI's log and the gateway disagree about reaching the model
    usage_disagreement: str | None = None
    #: the ATIF ``trajectory.json`` tbflow wrote on the host from the gateway's recording of the
    #: trial's model exchange (docs/trajectories.md); None when no model call was recorded
    trajectory: str | None = None
    #: why no trajectory could be written although the exchange was recorded (never the agent's verdict)
    trajectory_problem: str | None = None
    #: USD of the trial's model calls, priced per call from the price table over the gateway's
    #: token counts; None when a call's tokens are unknown or its model has no price (never 0)
    cost_usd: float | None = None
    #: when some calls could not be priced: the priced calls' sum (a lower bound) and how many were
    #: not (``tasks_lib/records/trial_cost.py`` shows it as "≥ $X, N calls unpriced")
    cost_priced_usd: float | None = None
    calls_unpriced: int = 0
    #: a host-side agent whose loop did not return within the grace after the deadline: left on
    #: its thread, what it did later is not part of the trial (tasks_lib/trial/host_run.py)
    abandoned: bool = False
    #: set when the task has a ``storage_mb``
    storage: StorageCount | None = None



class KillOutcome(BaseModel):
    """What kill-process-groups did before the verifier ran.

    ``cut_off`` is true when the agent did not finish by itself; only then are its sessions
    killed. ``left_running`` lists what the verifier ran next to, in both cases: the verifier
    judge's listing taken just before ``test.sh`` started (the kill tool's own listing when the
    verifier never got that far).
    """

    cut_off: bool
    killed: list[ProcessInfo] = Field(default_factory=list)
    left_running: list[ProcessInfo] = Field(default_factory=list)
    #: the kill could not be finished (tbflow's judge was stopped or killed in the container, or
    #: could not start there): the agent's doing, recorded, and the verifier still runs
    problem: str | None = None


class VerifierOutcome(BaseModel):
    """What run-verifier observed. ``reward`` is None whenever no valid reward was produced."""

    exit_code: int | None = None
    timed_out: bool = False
    timeout_sec: float
    duration_sec: float
    reward: float | None = None
    rewards: dict[str, float] = Field(default_factory=dict)
    problem: str | None = None
    #: a tampering flag was raised (see ``TrialRecord.flags``); the reward is still test.sh's own
    tampered: bool = False
    stdout_log: str | None = None
    #: which runner ran test.sh's tests
    runner: VerifierRunner | None = None
    #: "separate": test.sh ran in a fresh container of the task's environment that received only the
    #: artifacts (the task's ``[verifier] environment_mode``); "shared": in the agent's container
    environment: Literal["shared", "separate"] = "shared"
    #: what was collected from the agent's container (also ``artifacts/manifest.json``)
    artifacts: list[ArtifactEntry] = Field(default_factory=list)
    collect: list[CollectRun] = Field(default_factory=list)


class StageError(BaseModel):
    """An environment or harness failure that stopped the trial at some stage. ``internal`` is a
    bug in tbflow itself (the traceback is in ``error.txt``): never booked as the environment's."""

    stage: str
    kind: Literal["environment", "harness", "internal"]
    message: ContainerText
    evidence: str | None = None


class TrialFlag(BaseModel):
    """Something the agent did to its own trial that tbflow noticed; it never makes the trial
    invalid (docs/judge.md).

    ``tampering``: reward files or the verifier's directory were changed outside ``test.sh`` (the
    reward ``test.sh`` wrote still stands). ``broke-container``: the agent broke what the verifier
    needs (stopped the container, removed an interpreter, filled a disk, stopped or killed tbflow's
    judge); the trial is scored 0. ``toolchain-changed``: the verifier used a file the agent planted
    in the runner of the tests (a ``pytest`` first in PATH, a ``sitecustomize``, a stdlib shadow:
    ``tasks_lib/judge/runner_roles.py``), which tbflow cannot prevent: detected from the container's
    writable layer and access times, shown, the reward stands. ``system-changed``: such files the
    verifier did not use (informational).
    ``agent-processes``: processes the agent left ran next to test.sh (services a task asks for
    are expected to; a reader should know). ``harness-raised``: a host-side plug-in raised in its
    ``run`` after it had reached the model; the trial is scored on what the agent did until then,
    the traceback is the evidence (docs/write-a-harness.md, "Host-side agents").
    """

    kind: Literal["tampering", "broke-container", "toolchain-changed", "system-changed", "agent-processes",
                  "harness-raised"]
    message: ContainerText
    #: a file in the trial dir that shows it
    evidence: str | None = None


class Validity(BaseModel):
    """The verdict. ``scored`` carries a reward; ``invalid`` a kind, a reason and evidence;
    ``error`` is a tbflow bug (reason and ``error.txt``): neither scored nor invalid, re-run on
    resume."""

    status: Literal["scored", "invalid", "error"]
    reward: float | None = None
    kind: InvalidKind | None = None
    reason: ContainerText | None = None
    evidence: str | None = None
    #: scored trials of model harnesses: the witness that showed the harness reached the model — ``cli_log`` (its
    #: own event log shows tokens) or ``gateway`` (the log shows none, e.g. the CLI was killed
    #: before it logged usage, but tbflow's gateway relayed successful model responses with tokens)
    reached_model_by: Literal["cli_log", "gateway"] | None = None


# Unknown fields are ignored (pydantic's default), so records that still carry ``identity_digest``
# and ``generation`` (the keys of a build-image cache tbflow no longer has) load.
class TrialSpec(BaseModel):
    """Everything that identifies one trial of a job."""

    job_id: str
    trial_id: str
    task_name: str
    task_path: str
    #: the harness's key in the job (a built-in or entry-point name, a plug-in class's ``name``)
    harness: str
    attempt: int
    model: str | None = None
    timeout_multiplier: float = 1.0
    #: each log file copied out of the container is cut at this size (``--max-log-mb``)
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    #: how the job names the harness when that is not its key: ``module:Class`` or
    #: ``path/file.py:Class`` (None: ``harness`` is the name to resolve)
    harness_ref: str | None = None
    #: ``--build``: the image is built from ``environment/`` even when the task names a ``docker_image``
    force_build: bool = False
    #: run test.sh verbatim (the container's runner, detection only), never tbflow's supplied runner
    verbatim_test_sh: bool = False
    #: a regrade: the source trial's directory, whose recorded agent phase and artifacts stand in
    #: for running the agent (``tasks_lib/trial/regrade_replay.py``)
    regrade_source: str | None = None

    @property
    def harness_reference(self) -> str:
        """What to resolve to get this trial's harness (``harnesses/registry.py``)."""
        return self.harness_ref or self.harness


OrderMode = Literal["expected", "name", "random"]
ORDER_MODES: tuple[str, ...] = ("expected", "name", "random")


class QueuedTrial(BaseModel):
    trial_id: str
    expected_sec: float
    #: where ``expected_sec`` came from: history, a [metadata] key, or the agent timeout
    source: str


class TrialOrder(BaseModel):
    """The start order of a job's trials to run (``--order``; ``tasks_lib/job/trial_order.py``)."""

    mode: OrderMode
    seed: int | None = None
    trials: list[QueuedTrial]


class RanOn(BaseModel):
    """Which machine and which flow run ran a trial: the job's own run, or one of its shards
    (``flow_name`` ``tbflow-trials``) on whichever worker picked it up."""

    host: str
    pid: int
    flow_run_id: str | None = None
    flow_run_name: str | None = None
    flow_name: str | None = None


class RegradeOrigin(BaseModel):
    """The trial a regrade judged again (``tbflow regrade``): where it is and its verdict then, kept
    beside the new one so a reader sees what the new verifier changed."""

    trial_dir: str
    validity: Validity


class TrialRecord(BaseModel):
    """The record of one finished trial (``trial.json``)."""

    schema_version: int = RECORD_SCHEMA_VERSION
    spec: TrialSpec
    harness_kind: HarnessKind
    harness_version: str
    #: what the harness bundle was built from (package, version, integrity), for model harnesses
    harness_provenance: list[dict] = Field(default_factory=list)
    #: where the harness came from: built-in, an entry point (distribution and version), a module or
    #: a file (None in records written before tbflow recorded it: those were all built-ins)
    harness_source: HarnessSource | None = None
    started_at: datetime
    ended_at: datetime
    duration_sec: float
    image: ImageOutcome | None = None
    error: StageError | None = None
    agent: AgentOutcome | None = None
    kill: KillOutcome | None = None
    verifier: VerifierOutcome | None = None
    #: what was skipped or cut when the logs came out of the container (None: never downloaded)
    logs: LogsOutcome | None = None
    validity: Validity
    #: what the agent did to its own trial (tampering, a broken container), with evidence
    flags: list[TrialFlag] = Field(default_factory=list)
    #: earlier recorded tries of this trial, kept under ``attempts/<trial_id>/`` (``--rerun-invalid``)
    previous_tries: int = 0
    #: errors of environment failures that were retried within this run, oldest first
    env_retry_errors: list[str] = Field(default_factory=list)
    #: the machine and flow run that ran it (None in records written before tbflow recorded it)
    ran_on: RanOn | None = None
    #: a regrade's source trial and its verdict then (None: not a regrade)
    regraded_from: RegradeOrigin | None = None

    @property
    def trial_id(self) -> str:
        return self.spec.trial_id


class TaskProblemRecord(BaseModel):
    """A task that could not be loaded; listed in the job, never run."""

    name: str
    where: str
    message: str


class JobRecord(BaseModel):
    """``job.json``: the job's config and provenance, written at start and updated at the end."""

    schema_version: int = RECORD_SCHEMA_VERSION
    job_id: str
    job_name: str
    #: the dataset directory, or ``name@version`` of a dataset given by name
    dataset: str
    #: a dataset given by name (or an export of one): source, commit and every task's digest
    dataset_source: DatasetSource | None = None
    #: where the job directory is, as ``host:/absolute/path`` (written by the run that owns the job)
    location: str | None = None
    config: dict
    tbflow_version: str
    harness_versions: dict[str, str]
    started_at: datetime
    ended_at: datetime | None = None
    #: trial ids are ``<task>.<harness>.<attempt>`` (attempts count from 1)
    trial_ids: list[str] = Field(default_factory=list)
    identity: JobIdentity | None = None
    identity_digest: str | None = None
    #: per model harness: the packages its bundle was built from (name, version, integrity)
    harness_provenance: dict[str, list[dict]] = Field(default_factory=dict)
    task_problems: list[TaskProblemRecord] = Field(default_factory=list)
    #: keys of the run tasks' task.toml that neither Harbor's schema nor tbflow knows (ignored, shown)
    task_notes: list[TaskProblemRecord] = Field(default_factory=list)
    #: the start order of the trials this run of the job started (rewritten by each run)
    order: TrialOrder | None = None
