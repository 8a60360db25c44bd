"""Two tbflow processes that need the same missing image at the same moment (two runs on one
dataset, side by side) used to both build it: the per-tag lock lived in one process. Now the
second waits for the first's build (a host-wide flock, tasks_lib/container/build_lock.py) and
reuses its image."""

import json
import subprocess
import sys
import time
import uuid

import pytest

from task_factory import make_task

pytestmark = pytest.mark.docker

BUILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from tasks_lib.trial import images
from tasks_lib.task.task_loader import load_task
images.extra_build_options = lambda: {{"network_mode": "none"}}  # the test runs offline
go = Path({go!r})
while not go.exists():
    time.sleep(0.01)
out = images.ensure_image(load_task(Path({task!r})), Path({log!r}), "build.log")
print(json.dumps({{"source": out.source, "tag": out.tag}}))
"""


def test_two_processes_build_one_image_once(docker_ready, tmp_path):
    from conftest import ROOT

    task = make_task(tmp_path, "shared-image",
                     dockerfile=f"FROM tbflow/base:bookworm\nRUN sleep 4 && echo {uuid.uuid4()} > /marker\n")
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", BUILD.format(root=str(ROOT), go=str(go), task=str(task),
                                                                  log=str(tmp_path / f"build-{i}.log"))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    time.sleep(1.0)  # both processes are importing, then wait on the same file
    go.touch()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert results[0]["tag"] == results[1]["tag"]
    assert sorted(r["source"] for r in results) == ["built", "reused"], results
