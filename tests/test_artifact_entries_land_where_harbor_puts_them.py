"""Pure: which artifacts a trial collects, where each lands under artifacts/, what ``exclude``
leaves out (GNU tar's --exclude), which entries clash; the task keys of separate mode load or are
refused by name, and an artifact path cannot leave the trial's directory."""

import pytest
from pydantic import ValidationError

from task_factory import make_task
from tasks_lib.errors import TaskFormatError
from tasks_lib.task.task_loader import load_task
from tasks_lib.task.task_model import ArtifactSpec, TaskConfig
from tasks_lib.trial.artifact_plan import CONVENTION_DIR, collected, excluded, host_relative, overlapping


def test_convention_dir_is_collected_first_unless_the_task_names_it():
    assert [a.source for a in collected([ArtifactSpec(source="/app/out")])] == [CONVENTION_DIR, "/app/out"]
    own = ArtifactSpec(source="/logs/artifacts/", exclude=["*.log"])
    assert collected([own]) == [own]


@pytest.mark.parametrize("entry, lands", [
    (ArtifactSpec(source="/app/out.txt"), "app/out.txt"),
    (ArtifactSpec(source="/var/log/x/"), "var/log/x"),
    (ArtifactSpec(source="/app/out.txt", destination="answers/out.txt"), "answers/out.txt"),
    (ArtifactSpec(source="relative/dir"), "relative/dir"),
    (ArtifactSpec(source="/"), "root"),
])
def test_entry_lands_under_artifacts_by_harbors_rule(entry, lands):
    assert str(host_relative(entry)) == lands


@pytest.mark.parametrize("member, patterns, out", [
    ("a/b.pyc", ["*.pyc"], True),
    ("cache", ["cache"], True),
    ("deep/cache/x", ["cache"], True),
    ("build/tmp/x", ["build/tmp"], True),
    ("src/build/tmp", ["build/tmp"], True),
    ("cached", ["cache"], False),
    ("a/b.py", ["*.pyc"], False),
    ("a/b.py", [""], False),
])
def test_exclude_matches_any_run_of_whole_components_as_tar_does(member, patterns, out):
    assert excluded(member, patterns) is out


def test_an_entry_inside_an_earlier_ones_place_is_skipped_not_overwritten():
    entries = [ArtifactSpec(source="/app"), ArtifactSpec(source="/app/out.txt"), ArtifactSpec(source="/srv"),
               ArtifactSpec(source="/data", destination="app")]
    assert overlapping(entries) == {1: 0, 3: 0}


@pytest.mark.parametrize("bad", [{"source": "/app/../etc"}, {"source": ""},
                                 {"source": "/a", "destination": "/abs"}, {"source": "/a", "destination": "x/../../y"},
                                 {"source": "/a", "destination": "manifest.json"}])
def test_artifact_paths_cannot_leave_the_trials_directory(bad):
    with pytest.raises(ValidationError):
        ArtifactSpec(**bad)


def test_string_artifacts_are_sources_and_separate_mode_loads():
    config = TaskConfig.model_validate({"artifacts": ["/app/out", {"source": "/srv", "exclude": ["*.tmp"]}],
                                        "verifier": {"environment_mode": "separate",
                                                     "collect": [{"command": "true"}]}})
    assert [a.source for a in config.artifacts] == ["/app/out", "/srv"]
    assert config.verifier.collect[0].timeout_sec == 60.0


@pytest.mark.parametrize("name", ["Dockerfile", "docker-compose.yaml"])
def test_separate_verifier_image_built_from_tests_is_refused_naming_the_file(tmp_path, name):
    d = make_task(tmp_path, "own-verifier-image")
    (d / "task.toml").write_text('version = "1.0"\n[verifier]\nenvironment_mode = "separate"\n')
    (d / "tests" / name).write_text("FROM scratch\n")
    with pytest.raises(TaskFormatError) as e:
        load_task(d)
    assert e.value.where.endswith(f"tests/{name}") and "separate verifier" in e.value.message


def test_shared_task_with_a_tests_dockerfile_still_loads(tmp_path):
    d = make_task(tmp_path, "shared")
    (d / "tests" / "Dockerfile").write_text("FROM scratch\n")
    assert not load_task(d).separate_verifier
