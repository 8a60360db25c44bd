"""The image tag hashes the whole build context: editing a COPY'd file builds a new image, an
unchanged context reuses the existing one."""

import os
import uuid

from task_factory import make_task

from tasks_lib.trial.images import context_hash, ensure_image
from tasks_lib.task.task_loader import load_task


def test_changed_copied_file_gets_a_new_image(docker_ready, tmp_path):
    d = make_task(tmp_path, "copy-task", dockerfile="FROM tbflow/base:bookworm\nCOPY data.txt /data.txt\n",
                  env_files={"data.txt": f"one {uuid.uuid4()}\n"})  # unique: never built before
    first = ensure_image(load_task(d), tmp_path / "b1.log", "b1.log")
    again = ensure_image(load_task(d), tmp_path / "b2.log", "b2.log")
    assert first.source == "built" and again.source == "reused" and again.tag == first.tag
    (d / "environment" / "data.txt").write_text(f"two {uuid.uuid4()}\n")
    changed = ensure_image(load_task(d), tmp_path / "b3.log", "b3.log")
    assert changed.tag != first.tag and changed.source == "built"
    out = docker_ready.containers.run(changed.tag, ["cat", "/data.txt"], remove=True, network_mode="none")
    assert out.startswith(b"two ")


def test_mode_change_changes_the_hash(tmp_path):
    env = tmp_path / "env"
    env.mkdir()
    f = env / "run.sh"
    f.write_text("echo hi\n")
    os.chmod(f, 0o644)
    before = context_hash(env)
    os.chmod(f, 0o755)
    assert context_hash(env) != before
