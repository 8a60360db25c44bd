"""Which image a trial runs in (tasks_lib/trial/images.py): ``[environment] docker_image`` if it is
present locally, else pulled, else ``environment/`` is built; ``--build`` always builds. TB 2.x
tasks all name a prebuilt image, and this machine (like a user's offline worker) reaches no
registry: the pull fails, and that must read as lack of network in one line, never as a bug."""

from __future__ import annotations

import uuid

import pytest

from task_factory import make_task, record_of

pytestmark = pytest.mark.docker

PRESENT = 'docker_image = "tbflow/base:bookworm"\n'


@pytest.fixture
def dataset(tmp_path, monkeypatch):
    import tasks_lib.trial.images as images

    monkeypatch.setattr(images, "extra_build_options", lambda: {"network_mode": "none"})  # tests run offline
    monkeypatch.setenv("TBFLOW_HISTORY", str(tmp_path / "history.sqlite"))
    marker = f"built-marker-{uuid.uuid4().hex[:12]}"  # a new build context: never another session's image
    absent = f"tbflow-test/absent-{uuid.uuid4().hex[:12]}:1"
    ds = tmp_path / "ds"
    built = f"FROM tbflow/base:bookworm\nRUN echo {marker} > /marker\n"
    # solved only in the built image: which image ran is the reward
    make_task(ds, "present", extra_toml=PRESENT, dockerfile=built, check="[ ! -e /marker ]")
    make_task(ds, "absent", extra_toml=f'docker_image = "{absent}"\n', dockerfile=built,
              check=f"grep -q {marker} /marker")
    return ds, absent


def test_present_image_is_used_an_absent_one_is_built_after_the_pull_fails(run_job, dataset):
    ds, absent = dataset
    result = run_job(ds, job_name="default")
    present, fell_back = record_of(result, "present"), record_of(result, "absent")
    assert (present.validity.reward, present.image.source, present.image.tag) == (1.0, "docker_image",
                                                                                  "tbflow/base:bookworm")
    assert (fell_back.validity.reward, fell_back.image.source) == (1.0, "built"), fell_back.validity
    log = (ds.parent / "jobs" / "default" / "trials" / fell_back.trial_id / "build.log").read_text()
    assert f"docker_image {absent} is not present locally and the pull failed" in log
    assert "building environment/ instead" in log


def test_build_flag_builds_even_a_present_image(run_job, dataset):
    ds, _ = dataset
    result = run_job(ds, job_name="built", build=True)
    rec = record_of(result, "present")
    assert (rec.validity.reward, rec.image.source) == (0.0, "built"), rec.validity
    assert rec.image.tag.startswith("tbflow-task/present:") and rec.spec.force_build


def test_absent_image_without_a_dockerfile_is_one_line_saying_no_network(run_job, tmp_path):
    absent = f"tbflow-test/absent-{uuid.uuid4().hex[:12]}:1"
    task = make_task(tmp_path / "ds", "image-only", extra_toml=f'docker_image = "{absent}"\n')
    (task / "environment" / "Dockerfile").unlink()
    rec = record_of(run_job(tmp_path / "ds", env_retries=0), "image-only")
    assert (rec.validity.status, rec.validity.kind) == ("invalid", "environment"), rec.validity
    reason = rec.validity.reason
    assert "\n" not in reason and f"image {absent} is not present locally" in reason
    assert "no network to reach its registry" in reason and "no environment/Dockerfile" in reason


def test_build_flag_refuses_a_task_that_has_only_an_image(tmp_path):
    from flows.job.job_config import JobConfig
    from flows.job.job_plan import plan
    from tasks_lib.errors import InputError

    task = make_task(tmp_path / "ds", "image-only", extra_toml=PRESENT)
    (task / "environment" / "Dockerfile").unlink()
    with pytest.raises(InputError) as refused:
        plan(JobConfig(dataset=str(tmp_path / "ds"), jobs_dir=str(tmp_path / "jobs"), build=True), "job-x")
    assert refused.value.where == "--build" and "image-only" in refused.value.message
    assert not (tmp_path / "jobs").exists()
