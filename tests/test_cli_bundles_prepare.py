"""The four agent CLIs really prepare, run, and reach a model with the commands tbflow gives them.

This test downloads the real pinned packages (codex, opencode, claude: one native binary each;
pi: its npm tree plus a pinned Node) into the normal tbflow cache, so the first run on a
machine takes about a minute and later runs are cache hits. Each bundle must then:

* run ``--version`` on the host (the same machine the container runs on);
* be found again without npm or pip (a cache hit: npm and Python are off PATH);
* run headless with the exact argv/env of ``command()`` (paths under ``/opt/tbflow`` and
  ``/tmp/tbflow-*`` mapped to host dirs) against the mock model: a success must read 280/20
  tokens from the CLI's own log, a 401 must read as never reaching the model, with its reason,
  after a capped number of requests.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from tasks_lib.trial.harness_api import ModelAccess, PreparedHarness
from harnesses.cli.claude_code import ClaudeCodeHarness
from harnesses.cli.cli_harness import MODEL_RETRIES, TOKEN_ENV, CliHarness
from harnesses.cli.codex import CodexHarness
from harnesses.bundles.node_runtime import NODE_VERSION
from harnesses.cli.opencode import OpencodeHarness
from harnesses.cli.pi import CLI_JS, PiHarness
from mock_model import MockModel
from task_factory import make_task
from tasks_lib.task.task_loader import load_task

HARNESSES = [CodexHarness, OpencodeHarness, PiHarness, ClaudeCodeHarness]
TOKEN = "tbflow-trial-token-7f3a"
INSTRUCTION = "Create the file done.txt in the current directory."


@pytest.fixture(scope="module")
def prepared() -> dict[str, tuple[CliHarness, PreparedHarness]]:
    out = {}
    for cls in HARNESSES:
        h = cls()
        out[h.name] = (h, h.prepare(None))
    return out


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    root = tmp_path_factory.mktemp("tasks")
    return load_task(make_task(root, "hello", instruction=INSTRUCTION + "\n"))


def _run(argv: list[str], env: dict[str, str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, **kw)


@pytest.mark.parametrize("name", [c.name for c in HARNESSES])
def test_bundle_is_uploaded_under_opt_tbflow_with_provenance(prepared, name):
    h, p = prepared[name]
    assert (p.name, p.version, p.kind) == (name, h.version, "model")
    [upload] = p.uploads
    assert upload.target == f"/opt/tbflow/{name}"
    manifest = json.loads((upload.source / "manifest.json").read_text())
    assert upload.source.stat().st_mode & 0o755 == 0o755  # a non-root agent user can read and run it
    assert manifest["harness"] == name and manifest["version"] == h.version
    assert all(p.integrity for p in p.provenance)
    if name == "pi":
        assert [x.source for x in p.provenance] == ["npm", "pypi", "npm-tree"]
        assert p.provenance[0].integrity == PiHarness.integrity and p.provenance[2].files > 100
        assert (upload.source / CLI_JS).is_file() and (upload.source / "node/bin/node").is_file()
    else:
        [prov] = p.provenance
        assert prov.integrity == h.platform_package().integrity  # the pinned one
        binary = upload.source / "bin" / h.cli
        assert binary.is_file() and os.access(binary, os.X_OK)
        assert set(manifest["files"]) == {f"bin/{h.cli}"}  # one executable, no placeholder script


@pytest.mark.parametrize("name", [c.name for c in HARNESSES])
def test_bundled_cli_runs_version_on_the_host(prepared, name, tmp_path):
    h, p = prepared[name]
    bundle = p.uploads[0].source
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "pi"),
           "PI_OFFLINE": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    if name == "pi":
        node = _run([str(bundle / "node/bin/node"), "--version"], env)
        assert node.stdout.strip() == f"v{NODE_VERSION}"
        argv = [str(bundle / "node/bin/node"), str(bundle / CLI_JS), "--version"]
    else:
        argv = [str(bundle / "bin" / h.cli), "--version"]
    proc = _run(argv, env)
    assert proc.returncode == 0, proc.stderr
    assert h.version in proc.stdout + proc.stderr


def test_second_prepare_is_a_cache_hit_without_npm_or_pip(prepared, monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr("sys.executable", str(empty / "no-python"))  # pip download would fail too
    for cls in HARNESSES:
        again = cls().prepare(None)
        assert again.uploads == prepared[cls.name][1].uploads
        assert again.provenance == prepared[cls.name][1].provenance


@pytest.mark.parametrize("name", [c.name for c in HARNESSES])
def test_command_adds_only_harness_owned_environment(prepared, task, name):
    h, p = prepared[name]
    access = ModelAccess(base_url="http://127.0.0.1:18080", token=TOKEN, provider="openai", model="gpt-x")
    cmd = h.command(task, p, access)
    assert (cmd.stdout_name, cmd.stderr_name) == (f"{h.cli}.jsonl", f"{h.cli}.stderr.log")
    assert not {"HOME", "PATH", "USER", "PWD", "SHELL", "LD_LIBRARY_PATH"} & set(cmd.env)
    assert not any(k.startswith("XDG_") for k in cmd.env)  # opencode only defaults them, in its prelude
    assert TOKEN not in " ".join(cmd.argv)  # the token is never in argv or a written file
    assert [k for k, v in cmd.env.items() if v == TOKEN] == ["ANTHROPIC_API_KEY" if name == "claude-code" else TOKEN_ENV]
    assert cmd.argv[-1].strip() == task.instruction.strip()
    assert any(a.startswith(f"/opt/tbflow/{name}/") for a in cmd.argv)
    for value in list(cmd.env.values()) + cmd.argv:
        assert "/logs" not in value and "/root" not in value
    urls = json.dumps([cmd.argv, cmd.env])
    assert ("http://127.0.0.1:18080/v1" in urls) != (name == "claude-code")
    if name == "claude-code":
        assert cmd.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:18080" and cmd.env["CLAUDE_CODE_MAX_RETRIES"]


def host_run(h: CliHarness, p: PreparedHarness, task, access: ModelAccess, root: Path) -> SimpleNamespace:
    """Run ``command()`` on the host: the container paths mapped into ``root``, env -i style."""
    cmd = h.command(task, p, access)
    state, work, home, agent = (root / d for d in ("state", "work", "home", "agent"))
    for d in (work, home, agent):
        d.mkdir(parents=True)

    def host(s: str) -> str:
        return s.replace(h.target, str(p.uploads[0].source)).replace(h.state_dir, str(state))

    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), **{k: host(v) for k, v in cmd.env.items()}}
    with open(agent / cmd.stdout_name, "wb") as out, open(agent / cmd.stderr_name, "wb") as err:
        rc = subprocess.run([host(a) for a in cmd.argv], env=env, cwd=work, stdin=subprocess.DEVNULL,
                            stdout=out, stderr=err, timeout=180).returncode
    return SimpleNamespace(rc=rc, agent=agent, work=work, home=home, cmd=cmd)


@pytest.mark.parametrize("name", [c.name for c in HARNESSES])
def test_cli_reaches_the_mock_model_and_reports_usage(prepared, task, name, tmp_path):
    h, p = prepared[name]
    with MockModel(command="echo hi > done.txt") as mock:
        access = ModelAccess(base_url=mock.base_url, token=TOKEN, provider="openai", model="mock-model")
        r = host_run(h, p, task, access, tmp_path)
        requests = mock.requests
    log = (r.agent / r.cmd.stdout_name).read_text()
    assert r.rc == 0, (r.agent / r.cmd.stderr_name).read_text()[-2000:]
    usage = h.parse_usage(r.agent)
    assert (usage.input_tokens, usage.output_tokens) == (280, 20), log[-2000:]
    assert usage.cost_usd is None  # no price for a mock model: unknown, never 0 or a guess
    assert h.error_line(r.agent) is None
    assert (r.work / "done.txt").read_text() == "hi\n"  # the tool call ran in the work dir
    assert list(r.home.iterdir()) == []  # nothing written into the task's HOME
    model_calls = [q for q in requests if q["method"] == "POST"]
    assert all(TOKEN in (q["headers"].get("authorization", "") + q["headers"].get("x-api-key", "")) for q in model_calls)
    assert any(INSTRUCTION in json.dumps(q["body"]) for q in model_calls)
    expected_path = {"codex": "/v1/responses", "opencode": "/v1/chat/completions", "pi": "/v1/chat/completions",
                     "claude-code": "/v1/messages"}[name]
    assert all(q["path"].split("?")[0] == expected_path for q in model_calls)


@pytest.mark.parametrize("name", [c.name for c in HARNESSES])
def test_cli_401_reads_as_never_reaching_the_model(prepared, task, name, tmp_path):
    h, p = prepared[name]
    with MockModel() as mock:
        access = ModelAccess(base_url=mock.base_url + "/status/401", token=TOKEN, provider="openai", model="mock-model")
        r = host_run(h, p, task, access, tmp_path)
        posts = [q for q in mock.requests if q["method"] == "POST"]
    usage = h.parse_usage(r.agent)
    assert usage is None or usage.total_tokens == 0
    assert r.rc == (0 if name == "pi" else 1)  # pi exits 0 after a 401: judge by usage
    assert "401" in h.error_line(r.agent)
    # retries are capped (claude's default of 10 retries with backoff would take about 3 minutes)
    assert 1 <= len(posts) <= 1 + MODEL_RETRIES, posts
