"""The test session removes only containers and images it created: a container labelled as
another job's trial survives a whole (inner) pytest session, whose own task image is removed;
a tbflow task image built meanwhile from someone else's task dir is not counted as the session's
(it used to be: any tbflow task image created during the session was)."""

import io
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tasks_lib.container.docker_client import LABEL_CONTEXT, LABEL_JOB, LABEL_JOB_DIR, LABEL_TRIAL

ROOT = Path(__file__).resolve().parents[1]

INNER = textwrap.dedent('''\
    import uuid
    from task_factory import make_task

    def test_inner(run_job, tmp_path):
        ds = tmp_path / "ds"
        make_task(ds, "own", dockerfile=f"FROM tbflow/base:bookworm\\nRUN echo {uuid.uuid4().hex}\\n")
        rec = run_job(ds).records[0]
        assert rec.validity.status == "scored" and rec.image.source == "built", rec.validity
        print("OWN_IMAGE=" + rec.image.tag)
''')


@pytest.mark.docker
def test_foreign_container_and_image_survive_a_session(docker_ready, tmp_path):
    nonce = uuid.uuid4().hex[:10]
    elsewhere = Path("/var/tmp") / f"someone-else-{nonce}"
    foreign = docker_ready.containers.run(
        "tbflow/base:bookworm", ["sleep", "infinity"], detach=True, network_mode="none", init=True,
        labels={"tbflow": "1", LABEL_TRIAL: "t.oracle.1", LABEL_JOB: f"other-{nonce}",
                LABEL_JOB_DIR: str(elsewhere / "jobs" / "j")})
    inner_dir = tmp_path / "inner"
    inner_dir.mkdir()
    (inner_dir / "test_inner.py").write_text(INNER)
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tests'}{os.pathsep}{ROOT}")
    try:
        res = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-q", "-s", "-p", "no:cacheprovider",
                              "--basetemp", str(tmp_path / "inner-base"), "test_inner.py"],
                             cwd=inner_dir, env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        own = next(line.split("=", 1)[1] for line in res.stdout.splitlines() if line.startswith("OWN_IMAGE="))
        tags = {t for img in docker_ready.api.images() for t in (img.get("RepoTags") or [])}
        assert own not in tags, "the session's own task image must be removed"
        foreign.reload()
        assert foreign.status == "running", "the session touched another job's trial container"
    finally:
        foreign.remove(force=True)


@pytest.mark.docker
def test_only_images_built_from_the_sessions_dirs_are_its_own(docker_ready, tmp_path, tmp_path_factory):
    from session_cleanup import own_images

    nonce = uuid.uuid4().hex[:10]
    built = []
    try:
        for who, context in (("mine", tmp_path / "task" / "environment"),
                             ("theirs", Path("/var/tmp") / f"someone-else-{nonce}" / "environment")):
            tag = f"tbflow-task/i9a-{who}-{nonce}:1"
            docker_ready.images.build(fileobj=io.BytesIO(f"FROM tbflow/base:bookworm\nLABEL n={who}{nonce}\n".encode()),
                                      tag=tag, rm=True, labels={"tbflow": "1", LABEL_CONTEXT: str(context)})
            built.append(tag)
        refs = own_images(docker_ready.api, str(tmp_path_factory.getbasetemp()))
        assert built[0] in refs, "an image built from this session's task dir is its own"
        assert built[1] not in refs, "an image built during the session from another dir is not"
    finally:
        for tag in built:
            try:
                docker_ready.images.remove(tag)
            except Exception:  # noqa: BLE001 - one failed to build
                pass
