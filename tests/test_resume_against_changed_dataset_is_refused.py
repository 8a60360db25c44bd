"""job.json records a named dataset's name, version, source, commit and every task's digest; the
job identity covers them, so continuing the job against a dataset that changed under the same
name (the registry re-pinned, another machine's fetch) is refused with what changed. Records of
jobs run before datasets had names still load, with the identity digest they had."""

import hashlib
import json
import shutil

import pytest

from dataset_fixtures import dataset_repo, entry  # noqa: F401
from flows.job.job_config import JobConfig
from flows.job.job_plan import plan
from flows.job.job_result import job_record
from tasks_lib.dataset.cache import datasets_root
from tasks_lib.errors import InputError
from tasks_lib.records.job_identity import JobIdentity
from tasks_lib.store.job_store import JobStore
from tasks_lib.records.record_models import JobRecord


def test_resume_against_changed_dataset_is_refused_with_what_changed(dataset_repo, tmp_path):
    cfg = JobConfig(dataset="tiny-bench", registry=str(dataset_repo.registry), jobs_dir=str(tmp_path / "jobs"),
                    job_name="j")
    p = plan(cfg, "first")
    p.job_dir.mkdir(parents=True)
    JobStore(p.job_dir).write_job(job_record(p))
    rec = JobStore(p.job_dir).read_job()
    assert rec.dataset == "tiny-bench@2.0"  # the version it resolved to, so a resume keeps it
    src = rec.dataset_source
    assert src is not None and (src.name, src.version, src.commit) == ("tiny-bench", "2.0", dataset_repo.c2)
    assert src.source == str(dataset_repo.registry) and all(t.digest.startswith("sha256:") for t in src.tasks)
    assert rec.identity.dataset.tasks["beta"]["commit"] == dataset_repo.c2
    assert plan(cfg.model_copy(update={"dataset": rec.dataset}), "again").previous is not None  # unchanged: continues

    url, c1 = dataset_repo.url, dataset_repo.c1
    dataset_repo.write_registry([entry("tiny-bench", "2.0", url, c1, ["alpha", "beta"])])  # re-pinned
    shutil.rmtree(datasets_root())  # another machine, nothing cached
    with pytest.raises(InputError) as err:
        plan(cfg.model_copy(update={"dataset": rec.dataset}), "third")
    msg = err.value.message
    assert "different identity" in msg and f"dataset task beta commit: {dataset_repo.c2} -> {c1}" in msg
    assert "task beta changed: tests/test.sh" in msg and "task gamma is no longer in the dataset" in msg


def test_records_from_before_dataset_names_still_load():
    old = {"job_id": "x", "job_name": "j", "dataset": "/d", "config": {}, "tbflow_version": "0",
           "harness_versions": {}, "started_at": "2026-01-01T00:00:00Z",
           "identity": {"config": {}, "tasks": {}, "harnesses": {}, "judge": None}}
    rec = JobRecord.model_validate(old)
    assert rec.dataset_source is None and rec.identity.dataset is None
    blob = json.dumps(old["identity"], sort_keys=True, separators=(",", ":"))
    assert JobIdentity.model_validate(old["identity"]).digest == hashlib.sha256(blob.encode()).hexdigest()
