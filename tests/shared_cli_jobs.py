"""Real-CLI jobs that several tests assert on, run once per pytest worker.

A real-CLI trial costs a container and a CLI start (tens of CPU-seconds for the four CLIs on this
2-core machine); tests that only read what a happy run recorded share one job instead of running
their own. Each test keeps its failure-named name and asserts on the shared records. Tests that
use a shared job are put in one xdist group (tests/conftest.py), so the job runs once per session.

The happy job: every CLI (the two declared as files, qwen-code and gemini-cli, included) and the oracle on one task whose image sets its own PATH, ENV and
WORKDIR, against the scripted mock. The mock's one shell command probes the environment, looks
for pi's own tools on PATH, dumps every environment and readable file it can find (the real keys
must not land in the job dir), and solves the task; the final reply carries U+2028/U+2029/U+0085,
which pi writes raw on its usage line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from mock_model import MockModel
from task_factory import make_task, record_of, run_job_flow

HAPPY_CLIS = ["codex", "opencode", "pi", "claude-code", "qwen-code", "gemini-cli"]
HAPPY_HARNESSES = ["oracle", *HAPPY_CLIS]
HAPPY_TASK = "probe"
REAL_OPENAI_KEY = "sk-real-openai-0123456789-do-not-leak"
REAL_ANTHROPIC_KEY = "sk-ant-real-9876543210-do-not-leak"
REAL_GEMINI_KEY = "AIza-real-gemini-5647382910-do-not-leak"
REAL_KEYS = (REAL_OPENAI_KEY, REAL_ANTHROPIC_KEY, REAL_GEMINI_KEY)
IMAGE_PATH = "/opt/task-tools/bin:/usr/local/bin:/usr/bin:/bin"
ODD = "done\u2028line\u2029para\u0085next"
PROBE = ("{ id; pwd; echo \"HOME=$HOME\"; echo \"PATH=$PATH\"; echo \"IMAGE_MARKER=$IMAGE_MARKER\"; "
         "echo \"TASK_MARKER=$TASK_MARKER\"; } > /logs/agent/probe.txt")
WHICH = "command -v fd rg > /logs/agent/which.txt"
DUMP = ("env > /app/env.txt; cat /proc/*/environ /opt/tbflow/*/* /tmp/tbflow-*/* /tmp/tbflow-*/*/* "
        "> /app/cat.txt 2>/dev/null; cp /app/env.txt /app/cat.txt /logs/agent/")
HAPPY_COMMAND = f"{PROBE}; {WHICH}; {DUMP}; echo solved > /app/done.txt"


@dataclass
class SharedJob:
    """A finished job and what the mock model saw during it."""

    result: object  # flows.job.job_result.JobResult
    requests: list[dict] = field(default_factory=list)

    @property
    def job_dir(self) -> Path:
        return Path(self.result.job_dir)

    def record(self, harness: str, task: str = HAPPY_TASK):
        return record_of(self.result, task, harness)

    def agent_dir(self, harness: str, task: str = HAPPY_TASK) -> Path:
        return self.job_dir / "trials" / self.record(harness, task).trial_id / "agent"


def happy_task(root: Path) -> Path:
    make_task(root, HAPPY_TASK, solve=HAPPY_COMMAND + "\n", check="[ \"$(cat /app/done.txt)\" = solved ]",
              instruction="Create /app/done.txt containing the word solved.\n",
              dockerfile=f"FROM tbflow/base:bookworm\nENV IMAGE_MARKER=from-image\nENV PATH={IMAGE_PATH}\nWORKDIR /app\n",
              extra_toml='\n[environment.env]\nTASK_MARKER = "from-task-toml"\n',
              agent_timeout=240)  # generous: opencode alone took 52 s to start on a loaded machine
    return root


def run_happy_job(root: Path) -> SharedJob:
    """Run the happy job under ``root`` (its dataset and jobs dir) with the real keys set."""
    with MockModel(HAPPY_COMMAND, final_text=ODD) as mock, pytest.MonkeyPatch.context() as env:
        env.setenv("TBFLOW_OPENAI_BASE_URL", f"{mock.base_url}/v1")
        env.setenv("OPENAI_API_KEY", REAL_OPENAI_KEY)
        env.setenv("TBFLOW_ANTHROPIC_BASE_URL", mock.base_url)
        env.setenv("ANTHROPIC_API_KEY", REAL_ANTHROPIC_KEY)
        env.setenv("TBFLOW_GEMINI_BASE_URL", mock.base_url)
        env.setenv("GEMINI_API_KEY", REAL_GEMINI_KEY)
        env.setenv("TBFLOW_HISTORY", str(root / "trial-history.sqlite"))
        result = run_job_flow(happy_task(root / "ds"), root / "jobs", harnesses=HAPPY_HARNESSES,
                              model="mock/mock-model", concurrency=2)
        return SharedJob(result, mock.requests)
