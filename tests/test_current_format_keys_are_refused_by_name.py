"""A current-format task asks for things tbflow may not do yet (a separate verifier, steps,
sidecars, an allowlist, Windows). Each is refused naming its key, before any file check, or
honoured as Harbor does; keys no schema knows are reported as notes, never silently kept."""

from __future__ import annotations

import pytest

from task_factory import make_task

from tasks_lib.errors import TaskFormatError
from tasks_lib.task.key_check import check_keys
from tasks_lib.task.key_rules import rule_for
from tasks_lib.task.task_loader import load_dataset, load_task

HEAD = 'schema_version = "1.4"\n'


def _task(tmp_path, toml: str, name: str = "t"):
    d = make_task(tmp_path, name)
    (d / "task.toml").write_text(HEAD + toml)
    return d


@pytest.mark.parametrize("toml, shown", [
    ('[verifier.environment]\ndocker_image = "x"\n', "[verifier.environment]"),
    ('[[verifier.collect]]\ncommand = "true"\nservice = "db"\n', "[[verifier.collect]]"),
    ('artifacts = [{ source = "/dump.sql", service = "db" }]\n', "artifacts"),
    ('[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["pypi.org"]\n', "[environment] network_mode"),
    ('[environment]\nos = "windows"\n', "[environment] os"),
    ('[environment]\ngpus = 1\n', "[environment] gpus"),
    ('[environment.tpu]\ntype = "v6e"\ntopology = "2x4"\n', "[environment.tpu]"),
    ('[[environment.mcp_servers]]\nname = "m"\nurl = "http://mcp:8000"\n', "[environment] mcp_servers"),
    ('[environment]\nskills_dir = "/skills"\n', "[environment] skills_dir"),
    ('[agent]\nuser = "agent"\n', "[agent] user"),
    ('[verifier]\nuser = "tester"\n', "[verifier] user"),
    ('[verifier]\nnetwork_mode = "no-network"\n', "[verifier] network_mode"),
    ('[environment.env]\nOPENAI_API_KEY = "${OPENAI_API_KEY}"\n', "[environment] env"),
    ('[verifier.env]\nTOKEN = "${TOKEN:-x}"\n', "[verifier] env"),
])
def test_key_tbflow_cannot_honour_refuses_the_task_naming_it(tmp_path, toml, shown):
    d = _task(tmp_path, toml)
    with pytest.raises(TaskFormatError) as e:
        load_task(d)
    assert e.value.where == f"{d / 'task.toml'} {shown}"
    assert e.value.message.startswith("refused: " + shown)


def test_multi_step_task_is_refused_for_its_steps_not_a_missing_instruction(tmp_path):
    d = _task(tmp_path, '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n')
    (d / "instruction.md").unlink()  # a multi-step task keeps its instructions under steps/<name>/
    with pytest.raises(TaskFormatError) as e:
        load_task(d)
    assert e.value.where.endswith("task.toml [[steps]]")
    assert "multi-step" in e.value.message


def test_compose_file_next_to_a_dockerfile_is_refused_naming_it(tmp_path):
    d = make_task(tmp_path, "sidecar")
    (d / "environment" / "docker-compose.yaml").write_text("services:\n  api:\n    image: api\n")
    with pytest.raises(TaskFormatError) as e:
        load_task(d)
    assert e.value.where.endswith("environment/docker-compose.yaml")
    assert "compose" in e.value.message


def test_refused_task_is_listed_and_the_others_still_run(tmp_path):
    make_task(tmp_path, "a-plain")
    _task(tmp_path, '[verifier.environment]\ncpus = 2\n', name="b-verifier-env")
    ds = load_dataset(tmp_path)
    assert [t.name for t in ds.tasks] == ["a-plain"]
    assert [(p.name, p.where.split(" ", 1)[1]) for p in ds.problems] == [("b-verifier-env", "[verifier.environment]")]


@pytest.mark.parametrize("toml, allow_internet", [
    ('[environment]\nnetwork_mode = "no-network"\n', False),
    ('[environment]\nnetwork_mode = "public"\n', True),
    ('[environment]\nallow_internet = false\n[agent]\nnetwork_mode = "no-network"\n'
     '[verifier]\nnetwork_mode = "no-network"\n', False),
    ('[environment]\nallow_internet = true\nnetwork_mode = "no-network"\n', False),  # network_mode decides
])
def test_network_mode_is_honoured_as_the_containers_network(tmp_path, toml, allow_internet):
    assert load_task(_task(tmp_path, toml)).config.environment.allow_internet is allow_internet


@pytest.mark.parametrize("toml", [
    '[verifier]\nenvironment_mode = "shared"\nuser = "root"\n',
    '[environment]\nos = "Linux"\ngpus = 0\ngpu_types = []\nmcp_servers = []\n',
    'artifacts = []\nmulti_step_reward_strategy = "mean"\nsource = "x"\n',
    '[environment.env]\nLITERAL = "$HOME and ${not closed"\n',
    '[environment.healthcheck]\ncommand = "true"\nretries = 2\n',
    'artifacts = ["/app/out", { source = "/srv", exclude = ["*.tmp"] }]\n[verifier]\nenvironment_mode = "separate"\n'
    '[[verifier.collect]]\ncommand = "true"\n',
    '[task]\nname = "org/t"\nversion = "1"\n[[task.authors]]\nname = "a"\nemail = "a@b.c"\n',
])
def test_neutral_values_of_current_keys_load(tmp_path, toml):
    t = load_task(_task(tmp_path, toml))
    assert t.notes == []


def test_unknown_keys_are_reported_as_notes_not_dropped(tmp_path):
    t = load_task(_task(tmp_path, 'flavour = "x"\n[environment]\ntimeout_secs = 5\n[metadata]\nanything = 1\n'))
    assert t.notes == ["flavour: not a key of Harbor 0.26's task schema nor of tbflow's; ignored",
                       "[environment] timeout_secs: not a key of Harbor 0.26's task schema nor of tbflow's; ignored"]


def test_every_refusal_is_listed_not_only_the_first(tmp_path):
    found = check_keys({"environment": {"os": "windows", "gpus": 2}, "steps": [{"name": "a"}]})
    assert [r.key for r in found.refusals] == ["environment.os", "environment.gpus", "steps"]


def test_rows_cover_nested_keys_through_refused_or_free_parents():
    assert rule_for("steps[].verifier.environment.os")[0] == "steps"
    assert rule_for("task.authors[].email")[0] == "task.authors"
    assert rule_for("environment.not_a_key") is None


def test_every_row_of_the_key_table_is_in_the_docs():
    import re
    from pathlib import Path

    from tasks_lib.task.key_rules import RULES

    doc = (Path(__file__).resolve().parents[1] / "docs" / "task-format.md").read_text()
    quoted = " ".join(re.findall(r"`[^`]+`", doc))
    missing = [k for k in RULES if not re.search(rf"\b{re.escape(k.rsplit('.', 1)[-1])}\b", quoted)]
    assert not missing, f"docs/task-format.md does not say what happens to: {missing}"
