"""A declarative harness file that is not valid is refused before anything runs, in one line that
names the file and the field (``agents/x.toml: [command] argv: Field required``), and ``tbflow run
--harness bad.toml`` exits 2 with that line. A valid file renders its templates into the command
tbflow runs, reads usage through its field mapping, and is keyed in the job identity relative to
its own directory, never by an absolute path."""

import json
import subprocess
from pathlib import Path

import pytest

from tasks_lib.errors import InputError
from plugin_fixtures import DECLARED_TOML as GOOD, write_declared as _write  # noqa: F401
from tbflow_process import ROOT, TBFLOW

def _error(path: Path) -> str:
    from harnesses.declared.declared_harness import load_spec

    with pytest.raises(InputError) as exc:
        load_spec(path, "agents/x.toml")
    assert exc.value.where == "--harness"
    message = exc.value.message
    assert "\n" not in message and message.startswith("agents/x.toml: "), message
    return message.removeprefix("agents/x.toml: ")


def _good(tmp_path: Path) -> str:
    return GOOD.replace('sha256 = "{sha}"', 'sha256 = "' + "0" * 64 + '"')


BAD = [
    ("missing_argv", lambda t: t.replace('argv = ["{bundle}/package/run.sh", "--model={model}", "{instruction}"]\n', ""),
     "[command] argv: Field required"),
    ("unknown_key", lambda t: t.replace("[logs]\n", "[logs]\nstdot = 'a'\n"), "[logs] stdot: Extra inputs are not permitted"),
    ("unknown_table", lambda t: t + "\n[bundles]\nnpm = 'x'\n", "[bundles]: Extra inputs are not permitted"),
    ("unknown_placeholder", lambda t: t.replace("{instruction}", "{instructions}"),
     "[command] argv[2]: unknown placeholder {instructions}"),
    ("token_on_the_command_line", lambda t: t.replace("--model={model}", "--key={token}"),
     "[command] argv[1]: {token} may appear only in [command] env"),
    ("token_in_a_file", lambda t: t.replace('"model": "{model}"', '"key": "{token}"'),
     "[command] files.'{state}/conf.json': {token} may appear only in [command] env"),
    ("version_not_exact", lambda t: t.replace('version = "0.1.0"', 'version = "latest"'),
     "[harness] version: 'latest' is not an exact version"),
    ("npm_without_integrity", lambda t: t.replace('dir = "agent"\nsha256 = "' + "0" * 64 + '"', 'npm = "pkg@1.0.0"'),
     "[bundle]: integrity: an npm bundle needs its sha512 pin"),
    ("npm_range", lambda t: t.replace('dir = "agent"\nsha256 = "' + "0" * 64 + '"', 'npm = "pkg@^1.0.0"\nintegrity = "x"'),
     "[bundle]: npm: '^1.0.0' is not an exact version"),
    ("two_sources", lambda t: t.replace('dir = "agent"', 'dir = "agent"\ntarball = "a.tgz"'),
     "[bundle]: give exactly one of npm, dir, tarball, wheel (got dir, tarball)"),
    ("short_sha256", lambda t: t.replace("0" * 64, "abc"), "[bundle]: sha256: a dir bundle needs its sha256 pin"),
    ("bad_regex", lambda t: t.replace("'ERROR: (.*)'", "'ERROR: (.*'"), "[logs] error_pattern: not a regular expression"),
    ("log_name_with_a_path", lambda t: t.replace('stdout = "tiny.jsonl"', 'stdout = "../tiny.jsonl"'),
     "[logs] stdout: '../tiny.jsonl' must be a plain file name in /logs/agent"),
    ("unknown_parser", lambda t: t.replace('match = { object = "chat.completion" }\ninput = "usage.prompt_tokens"\n'
                                           'output = ["usage.completion_tokens"]\ncombine = "sum"', 'parser = "aider"'),
     "[usage]: parser: 'aider' is not one of claude-code, codex, opencode, pi"),
    ("input_without_output", lambda t: t.replace('output = ["usage.completion_tokens"]\n', ""),
     "[usage]: give parser, or both input and output"),
    ("model_harness_without_wire_api", lambda t: t.replace('wire_api = "openai-chat"\n', ""),
     "[harness] wire_api: a model harness names its wire API"),
    ("unknown_wire_api", lambda t: t.replace('"openai-chat"', '"openai-completions"'), "[harness] wire_api: Input should be"),
    ("exit_code_not_a_number", lambda t: t.replace('3 = "incomplete"', 'three = "incomplete"'),
     "[exit_codes] three: Input should be a valid integer"),
    ("not_toml", lambda t: t + "\n[[[", "not valid TOML"),
]


@pytest.mark.parametrize("name, edit, expected", BAD, ids=[b[0] for b in BAD])
def test_bad_file_is_refused_naming_file_and_field(tmp_path, name, edit, expected):
    good = _good(tmp_path)
    text = edit(good.replace("{{", "{").replace("}}", "}"))
    assert text != good.replace("{{", "{").replace("}}", "}"), "the edit must change the file"
    path = tmp_path / "x.toml"
    path.write_text(text)
    assert expected in _error(path)


def test_tbflow_run_with_a_bad_file_exits_2_with_one_line_and_writes_nothing(tmp_path):
    bad = tmp_path / "agents" / "bad.toml"
    bad.parent.mkdir()
    bad.write_text('[harness]\nname = "bad"\nversion = "1.0.0"\nwire_api = "openai-chat"\n'
                   '[bundle]\nnpm = "x@1.0.0"\nintegrity = "sha512-' + "A" * 86 + '=="\n[logs]\nstdout = "o"\n')
    jobs = tmp_path / "jobs"
    res = subprocess.run([*TBFLOW, "run", str(ROOT / "examples" / "tasks"), "--harness", "agents/bad.toml",
                          "--jobs-dir", str(jobs)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip() == "tbflow: error: --harness: agents/bad.toml: [command]: Field required", res.stderr
    assert not jobs.exists()


def test_missing_file_names_the_path_it_tried(tmp_path):
    from harnesses.registry import resolve_harness

    with pytest.raises(InputError) as exc:
        resolve_harness(str(tmp_path / "nope.toml"))
    assert f"path/file.toml: no file {tmp_path / 'nope.toml'}" in exc.value.message


def test_good_file_renders_its_templates_reads_its_usage_and_is_keyed_relative(tmp_path):
    from harnesses.registry import resolve_harness
    from tasks_lib.records.job_identity import adapter_files
    from tasks_lib.task.task_loader import load_task
    from tasks_lib.trial.harness_api import ModelAccess
    from task_factory import make_task

    path = _write(tmp_path, GOOD, name="tiny.toml")
    got = resolve_harness(str(path))
    assert (got.key, got.source.origin, got.source.target) == ("tiny", "declared", "tiny.toml")
    harness = got.cls()
    assert (harness.kind, harness.wire_api, harness.semantic_exit_codes) == ("model", "openai-chat", {3: "incomplete"})
    task = load_task(make_task(tmp_path / "ds", "t", instruction="-do it\n"))
    prepared = harness.prepare(task)
    assert prepared.uploads[0].target == "/opt/tbflow/tiny"
    assert (prepared.uploads[0].source / "package" / "run.sh").read_text() == "#!/bin/sh\necho hi\n"
    access = ModelAccess(base_url="http://127.0.0.1:18080", token="sk-tbflow-abc", provider="mock", model="m1")
    cmd = harness.command(task, prepared, access)
    assert cmd.argv[:2] == ["sh", "-c"] and cmd.argv[-3:] == ["/opt/tbflow/tiny/package/run.sh", "--model=m1", "-do it\n"]
    assert '{"model": "m1"}' in cmd.argv and "sk-tbflow-abc" not in json.dumps(cmd.argv)
    assert cmd.env == {"TINY_KEY": "sk-tbflow-abc", "TINY_URL": "http://127.0.0.1:18080/v1"}
    assert (cmd.stdout_name, cmd.stderr_name) == ("tiny.jsonl", "tiny.stderr.log")

    agent = tmp_path / "trial" / "agent"
    agent.mkdir(parents=True)
    reply = {"object": "chat.completion", "usage": {"prompt_tokens": 30, "completion_tokens": 3}}
    (agent / "tiny.jsonl").write_text(f"noise\n{json.dumps(reply)}\n{json.dumps(reply)}\n{{\"object\": \"chat.comp")
    (agent / "tiny.stderr.log").write_text("ERROR: upstream said no\n")
    usage = harness.parse_usage(agent)
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (60, 6, None)
    assert harness.error_line(agent) == "upstream said no"

    keys = adapter_files(harness)
    assert "tiny.toml" in keys and "harnesses/declared/declared_harness.py" in keys
    assert not any(k.startswith("/") or str(tmp_path) in k for k in keys), keys


def test_shipped_files_are_built_ins_keyed_relative_to_tbflow():
    from harnesses.registry import builtin_names, get_harness
    from tasks_lib.records.job_identity import adapter_files

    assert {"qwen-code", "gemini-cli"} <= set(builtin_names())
    qwen, gemini = get_harness("qwen-code"), get_harness("gemini-cli")
    assert (qwen.wire_api, gemini.wire_api) == ("openai-chat", "gemini-generate-content")
    assert "harnesses/declared/qwen-code.toml" in adapter_files(qwen)
    assert "harnesses/declared/gemini-cli.toml" not in adapter_files(qwen)  # one file changing spares the other
