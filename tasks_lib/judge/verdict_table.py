"""The run-verifier verdict as one table over collected evidence (pure: no Docker, no files).

``collect`` (``verifier_stage``) gathers every engine answer and the judge's report into
``VerifierEvidence``, each failure to collect kept as evidence; ``decide`` reads it top to bottom
and the first row that holds gives the verdict. Three outcomes only:

* **scored**: test.sh's reward stands (flags say what the agent did around it);
* **the agent's result** (``broke``): scored 0 with a ``broke-container`` flag and its evidence;
  whatever happens inside the container once the agent ran is the agent's, *if evidence shows it*;
* **not the agent's**: ``environment`` (the engine or the host failed: invalid, may be retried) or
  an outcome with no reward (``invalid: verifier``: test.sh itself hung or wrote nothing).

docs/judge.md carries this table as a reader's table; a test checks both name the same rows.
"""

from __future__ import annotations

from typing import Callable

from pydantic import BaseModel, Field

from tasks_lib.text_clean import escaped_name
from tasks_lib.judge.judge_report import Disk, JudgeReport
from tasks_lib.judge.rewards import RewardReading
from tasks_lib.judge.runner_roles import ROLES
from tasks_lib.judge.runner_use import RunnerEvidence, RunnerFile

#: the signals that, ending test.sh not from tbflow's judge, mean another process killed it:
#: SIGKILL only (not counted by the OOM killer). SIGTERM and its kind also end an honest test.sh
#: whose ``trap 'kill 0' EXIT`` cleans up its background jobs (bash then dies of its own SIGTERM)
SENT_SIGNALS = {9: "SIGKILL"}
#: share of the verifier's wall time the agent's leftover processes spent on the CPU that counts as
#: starving it (a service answering the tests' requests uses far less)
CPU_STARVING = 0.5


class JudgeRun(BaseModel):
    """How the judge's exec ended, as the engine and its channel said."""

    complete: bool
    exit_code: int | None = None
    timed_out: bool = False
    overflow: bool = False
    duration_sec: float = 0.0
    problem: str | None = None


class VerifierEvidence(BaseModel):
    timeout_sec: float
    grace_sec: float
    #: None when the judge could not be started at all (``start_error`` says why)
    run: JudgeRun | None = None
    start_error: str | None = None
    report: JudgeReport = Field(default_factory=JudgeReport)
    reading: RewardReading = Field(default_factory=RewardReading)
    runner: RunnerEvidence = Field(default_factory=lambda: RunnerEvidence(source="none"))
    #: asked of the engine only where a row needs it (None: not asked, or no answer)
    container_running: bool | None = None
    engine_answers: bool | None = None

    @property
    def started(self) -> bool:
        return self.run is not None

    @property
    def judge(self) -> JudgeRun:
        """The judge's run (one that never started counts as not complete)."""
        return self.run or JudgeRun(complete=False)

    @property
    def full_disk(self) -> Disk | None:
        return next((d for d in self.report.disks if d.full), None)

    @property
    def agent_ran(self) -> bool:
        return bool(self.report.ran_next_to)

    @property
    def planted(self) -> list[RunnerFile]:
        return planted_and_used(self.runner.files)

    @property
    def killed_by_another(self) -> str | None:
        """The signal that ended test.sh, when neither the judge (only at the timeout) nor the
        kernel's OOM killer (its count did not grow) sent it and the agent's processes ran."""
        sig = self.report.signal
        if not self.agent_ran or self.report.timed_out or sig not in SENT_SIGNALS:
            return None
        if sig == 9 and self.report.oom_kills != 0:
            return None  # the OOM killer's, or not known not to be
        return SENT_SIGNALS[sig]

    @property
    def blockers(self) -> list[str]:
        """Evidence that the agent made test.sh hang or end without a reward."""
        r, seen = self.report, []
        seen += [f"test.sh used {f.path} ({ROLES[f.role][1]})" for f in self.runner.files
                 if ROLES[f.role][0] == "hang" and f.used]
        fifos = {escaped_name(p) for s in r.stuck for p in s.fifo_paths}  # as the runner files' paths are stored
        made = {f.path for f in self.runner.files if f.role == "fifo"}
        seen += [f"test.sh was blocked on the FIFO {p}, which the agent made" for p in sorted(fifos & made)]
        if made and not fifos and any("fifo" in s.wchan or "pipe" in s.wchan for s in r.stuck):
            seen.append(f"test.sh was blocked in a FIFO while the agent had made {', '.join(sorted(made)[:3])}")
        if self.agent_ran and r.reward_rewrites:
            seen.append(f"while test.sh ran next to the agent's processes, {r.reward_rewrites}")
        stopped = [s for s in r.stuck if s.state in ("T", "t")]
        if stopped and self.agent_ran:
            seen.append(f"{len(stopped)} of test.sh's processes were stopped (SIGSTOP) next to the agent's processes")
        wall = self.run.duration_sec if self.run else 0.0
        if r.agent_cpu_sec is not None and wall > 0 and r.agent_cpu_sec >= CPU_STARVING * wall:
            seen.append(f"the agent's leftover processes used {r.agent_cpu_sec:.1f} CPU-s of the verifier's {wall:.1f} s")
        return seen


class Verdict(BaseModel):
    """What ``decide`` concluded; the caller turns it into the outcome, a flag, or an error."""

    row: str
    problem: str | None = None
    #: set: the agent's result, scored 0 with a broke-container flag carrying this message
    broke: str | None = None
    #: set: the environment failed (the caller raises an environment failure with this message)
    environment: str | None = None
    missing_interpreter: bool = False
    timed_out: bool = False


Row = tuple[str, Callable[[VerifierEvidence], bool], Callable[[VerifierEvidence], Verdict]]


def _listed(items: list[str], shown: int) -> str:
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def _files(files: list[RunnerFile]) -> str:
    return _listed([f"{f.change} {f.path}" for f in files], 5)


def planted_and_used(files: list[RunnerFile]) -> list[RunnerFile]:
    """Runner files the agent planted that the verifier used (or may have: use unknown)."""
    return [f for f in files if ROLES[f.role][0] == "gate" and f.used is not False]


def _judge_how(e: VerifierEvidence) -> str:
    return (f"did not finish within {e.timeout_sec + e.grace_sec:g} s (stopped from inside)" if e.judge.timed_out
            else f"was killed (exit {e.judge.exit_code})")


def _ended(e: VerifierEvidence) -> str:
    return f"test.sh ran past the verifier timeout of {e.timeout_sec:g}s" if e.report.timed_out else \
        f"test.sh gave no reward ({e.report.failure or e.reading.problem or 'no reward file'})"


def _hung_or_empty(e: VerifierEvidence) -> bool:
    return e.report.timed_out or e.reading.reward is None


def _mb(e: VerifierEvidence) -> int:
    return (e.runner.written_bytes or 0) // 2**20


def _disk(e: VerifierEvidence) -> str:
    return e.full_disk.path if e.full_disk else ""


ROWS: tuple[Row, ...] = (
    # the judge itself: started, ended by itself, reported whole
    ("judge-not-started", lambda e: not e.started and not (e.engine_answers and e.container_running),
     lambda e: Verdict(row="", environment=e.start_error or "tbflow's judge could not be started")),
    ("judge-not-started-inside", lambda e: not e.started,
     lambda e: Verdict(row="", problem=e.start_error, broke=f"tbflow's judge could not run in the container "
                       f"({e.start_error}); only the agent's processes (e.g. the container's pids limit) can cause that")),
    ("container-stopped", lambda e: not e.judge.complete and e.container_running is False,
     lambda e: Verdict(row="", environment=f"the container stopped while the verifier ran (exit {e.judge.exit_code})")),
    ("report-lost", lambda e: not e.judge.complete and e.judge.exit_code == 0 and not e.judge.timed_out
     and not e.judge.overflow,
     lambda e: Verdict(row="", environment="tbflow's judge ended normally but its report did not arrive whole "
                       f"({e.judge.problem or 'no end record'})")),
    ("judge-stopped", lambda e: not e.judge.complete,
     lambda e: Verdict(row="", problem=f"tbflow's judge {_judge_how(e)} before it reported test.sh's result",
                       broke=f"tbflow's judge {_judge_how(e)} before it reported test.sh's result; only a process "
                             "in the container can do that")),
    # test.sh hung or wrote no reward: the agent's only with evidence
    ("planted-runner-no-reward", lambda e: _hung_or_empty(e) and bool(e.planted),
     lambda e: Verdict(row="", problem=_ended(e), timed_out=e.report.timed_out,
                       broke=f"{_ended(e)} after it used runner files the agent planted: {_files(e.planted)}")),
    ("verifier-blocked", lambda e: _hung_or_empty(e) and bool(e.blockers),
     lambda e: Verdict(row="", problem=_ended(e), timed_out=e.report.timed_out,
                       broke=f"{_ended(e)}: {'; '.join(e.blockers[:3])}")),
    ("verifier-timeout", lambda e: e.report.timed_out,
     lambda e: Verdict(row="", problem=_ended(e), timed_out=True)),
    # the reward files
    ("reward-after-test-sh-was-killed", lambda e: e.killed_by_another is not None and e.reading.reward is not None,
     lambda e: Verdict(row="", problem=f"test.sh was killed ({e.killed_by_another})",
                       broke=f"test.sh was killed ({e.killed_by_another}) while processes the agent left ran next to "
                             "it, by neither tbflow's judge nor the OOM killer; the reward file it left cannot be "
                             "told from one those processes wrote")),
    # nothing outside the container sends SIGKILL to test.sh but the judge (at the timeout) and
    # the OOM killer: with neither, it came from inside, from the agent's processes or from the
    # agent's code the tests ran (issue 38: "SIGKILLs test.sh's bash" escaped to invalid)
    ("test-sh-killed-no-reward", lambda e: e.reading.reward is None and not e.report.timed_out
     and e.report.signal in SENT_SIGNALS and e.report.oom_kills == 0,
     lambda e: Verdict(row="", problem=f"test.sh was killed ({SENT_SIGNALS[e.report.signal or 9]})",
                       broke=f"test.sh was killed ({SENT_SIGNALS[e.report.signal or 9]}) by neither tbflow's judge "
                             "nor the OOM killer and wrote no reward; only a process in the container can do that")),
    ("reward-not-a-file", lambda e: _odd(e) is not None,
     lambda e: Verdict(row="", problem=f"{_odd(e)} when test.sh exited",
                       broke=f"{_odd(e)}, not a file, when test.sh exited")),
    ("reward-rewritten", lambda e: e.agent_ran and bool(e.report.reward_rewrites),
     lambda e: Verdict(row="", problem=f"the reward files changed while test.sh ran: {e.report.reward_rewrites}",
                       broke=f"while test.sh ran next to processes the agent left, {e.report.reward_rewrites}; the "
                             "reward test.sh wrote cannot be told apart")),
    ("scored", lambda e: e.reading.reward is not None,
     lambda e: Verdict(row="", problem=e.report.failure or e.reading.problem)),
    # no reward: what the agent broke, or what the environment lacks
    ("no-bash", lambda e: bool(e.report.no_bash) and not any(p.endswith("/bash") for p in e.runner.deleted_system),
     lambda e: Verdict(row="", missing_interpreter=True,
                       environment="the image has no bash, which is needed to run tests/test.sh")),
    ("system-files-deleted", lambda e: bool(e.runner.deleted_system),
     lambda e: Verdict(row="", problem=_ended(e), broke=f"the agent deleted {_listed(e.runner.deleted_system, 8)}; "
                       f"{'test.sh could not run' if e.report.no_bash else 'test.sh wrote no reward'}")),
    ("disk-full-private", lambda e: e.full_disk is not None and e.full_disk.fstype != "overlay",
     lambda e: Verdict(row="", problem=_ended(e), broke=f"the agent filled {_disk(e)} "
                       f"({e.full_disk.fstype if e.full_disk else ''}); test.sh wrote no reward")),
    ("disk-full-own", lambda e: e.full_disk is not None and (e.runner.written_bytes or 0) >= e.full_disk.total_kb * 512,
     lambda e: Verdict(row="", problem=_ended(e),
                       broke=f"the agent filled the disk ({_mb(e)} MB written in its container); test.sh wrote no reward")),
    ("disk-full-host", lambda e: e.full_disk is not None,
     lambda e: Verdict(row="", environment=f"the host's disk is full ({_disk(e)}) and the container wrote only "
                       f"{_mb(e)} MB of it; test.sh wrote no reward")),
    ("no-reward-next-to-agent", lambda e: e.agent_ran or bool(e.report.failure),
     lambda e: Verdict(row="", problem=_ended(e),
                       broke=f"{_ended(e)} while {len(e.report.ran_next_to)} process(es) the agent left ran next to it"
                       if e.agent_ran else f"tbflow's judge could not prepare test.sh: {e.report.failure}")),
    ("no-reward", lambda e: True, lambda e: Verdict(row="", problem=_ended(e))),
)


def _odd(e: VerifierEvidence) -> str | None:
    return next((f"{n} was a {t}" for n, t in e.report.file_types.items() if n in ("reward.txt", "reward.json")), None)


def decide(e: VerifierEvidence) -> Verdict:
    """The first row of ``ROWS`` that holds for ``e``."""
    for name, when, then in ROWS:
        if when(e):
            return then(e).model_copy(update={"row": name})
    raise AssertionError("the last row always holds")


def runner_flags(runner: RunnerEvidence) -> list[tuple[str, str]]:
    """(kind, message) of what the agent left for the runner: ``toolchain-changed`` (fails the
    default gate) when the verifier used a runner file the agent planted, or when what the agent
    changed could not be read; ``system-changed`` (informational) for the rest."""
    gate = planted_and_used(runner.files)
    out = []
    if gate:
        out.append(("toolchain-changed", f"the verifier used runner files the agent planted: {_files(gate)}"
                    + ("" if all(f.used for f in gate) else " (whether they were used could not be told)")))
    elif runner.source == "none" or runner.incomplete:
        out.append(("toolchain-changed", f"what the agent changed could not be read ({runner.problem}); the runner "
                                         "of the tests cannot be vouched for"))
    rest = [f"{f.change} {f.path}" for f in runner.files if f not in gate]
    rest += [f"deleted {p}" for p in runner.deleted_system]
    if rest:
        out.append(("system-changed", f"the agent changed files the runner could use; the verifier did not use "
                                      f"them as such: {_listed(rest, 5)}"))
    return out
