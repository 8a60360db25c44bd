"""task.toml in both TB 2.x forms loads into models; a malformed task names its file and field
and does not stop the other tasks."""

import pytest

from task_factory import make_task

from tasks_lib.errors import InputError, TaskFormatError
from tasks_lib.task.task_loader import load_dataset, load_task

TB21 = """\
schema_version = "1.1"
artifacts = []

[task]
name = "terminal-bench/demo"
description = "demo"
keywords = ["a", "b"]

[metadata]
author_name = "someone"
difficulty = "hard"
expert_time_estimate_min = 30

[agent]
timeout_sec = 900.0

[verifier]
timeout_sec = 1200.0

[verifier.env]
PYTHONPATH = "/app"

[environment]
build_timeout_sec = 600.0
docker_image = "alexgshaw/demo:20251031"
cpus = 2
memory_mb = 4096
storage_mb = 10240
gpus = 0
allow_internet = true
workdir = "/app/site"

[environment.env]
PATH = "/opt/venv/bin:/usr/bin:/bin"

[solution.env]
SOLVER = "1"
"""


def _write_toml(d, text):
    (d / "task.toml").write_text(text)


def test_tb21_schema_version_form(tmp_path):
    d = make_task(tmp_path, "demo")
    _write_toml(d, TB21)
    t = load_task(d)
    c = t.config
    assert c.schema_version == "1.1"
    assert c.task.name == "terminal-bench/demo" and c.task.keywords == ["a", "b"]
    assert c.metadata["difficulty"] == "hard"
    assert (c.agent.timeout_sec, c.verifier.timeout_sec) == (900.0, 1200.0)
    assert c.verifier.env == {"PYTHONPATH": "/app"}
    e = c.environment
    assert (e.docker_image, e.cpus, e.memory_mb, e.storage_mb, e.allow_internet, e.workdir) == (
        "alexgshaw/demo:20251031", 2, 4096, 10240, True, "/app/site")
    assert e.env["PATH"].startswith("/opt/venv/bin")
    assert c.solution.env == {"SOLVER": "1"}
    assert t.has_solution


def test_tb20_version_form_and_legacy_memory(tmp_path):
    d = make_task(tmp_path, "old")
    _write_toml(d, 'version = "1.0"\n[environment]\nmemory = "2G"\nstorage = "10G"\n')
    c = load_task(d).config
    assert c.schema_version == "1.0"
    assert (c.environment.memory_mb, c.environment.storage_mb) == (2048, 10240)
    assert c.agent.timeout_sec == 600.0  # Harbor's default


@pytest.mark.parametrize("toml, field", [
    ('[environment]\nmemory_mb = "lots"\n', "[environment] memory_mb"),
    ('[agent]\ntimeout_sec = -5\n', "[agent] timeout_sec"),
    ('[environment]\ngpus = 1\n', "[environment] gpus"),
    ('[verifier]\nenv = "x"\n', "[verifier] env"),
    ('[environment]\nworkdir = "relative"\n', "[environment] workdir"),
])
def test_bad_field_is_named(tmp_path, toml, field):
    d = make_task(tmp_path, "bad")
    _write_toml(d, toml)
    with pytest.raises(TaskFormatError) as e:
        load_task(d)
    assert str(d / "task.toml") in e.value.where
    assert field in e.value.where


def test_invalid_toml_and_missing_files_are_named(tmp_path):
    d = make_task(tmp_path, "syntax")
    _write_toml(d, "[agent\n")
    with pytest.raises(TaskFormatError, match="not valid TOML"):
        load_task(d)
    d2 = make_task(tmp_path, "no-tests")
    (d2 / "tests" / "test.sh").unlink()
    with pytest.raises(TaskFormatError) as e:
        load_task(d2)
    assert e.value.where.endswith("tests/test.sh")


def test_malformed_task_is_reported_and_others_load(tmp_path):
    make_task(tmp_path, "a-good")
    bad = make_task(tmp_path, "b-bad")
    _write_toml(bad, "[agent]\ntimeout_sec = 'soon'\n")
    make_task(tmp_path, "c-good")
    ds = load_dataset(tmp_path)
    assert [t.name for t in ds.tasks] == ["a-good", "c-good"]
    assert [p.name for p in ds.problems] == ["b-bad"]
    assert "[agent] timeout_sec" in ds.problems[0].where


def test_single_task_dir_is_a_dataset_and_filters_apply(tmp_path):
    for n in ("alpha", "beta", "gamma"):
        make_task(tmp_path, n)
    assert [t.name for t in load_dataset(tmp_path / "beta").tasks] == ["beta"]
    assert [t.name for t in load_dataset(tmp_path, include=["*a"]).tasks] == ["alpha", "beta", "gamma"]
    assert [t.name for t in load_dataset(tmp_path, exclude=["b*"]).tasks] == ["alpha", "gamma"]
    assert [t.name for t in load_dataset(tmp_path, n_tasks=2).tasks] == ["alpha", "beta"]


def test_empty_or_missing_dataset_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_dataset(tmp_path / "nope")
    with pytest.raises(InputError, match="no tasks found"):
        load_dataset(tmp_path)
