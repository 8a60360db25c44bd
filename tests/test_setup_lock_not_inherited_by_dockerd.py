"""scripts/setup.sh serialises itself with a lock file; the dockerd it starts must not inherit
that lock, or every later setup (each ``./tbflow run``) waits on it until its 30 min timeout.
This bit a real run: ``scripts/test.sh`` started dockerd, then ``./tbflow run`` hung."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _holders(lock_dir: str) -> list[str]:
    found = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            for fd in fd_dir.iterdir():
                target = os.readlink(fd)
                if target.startswith(lock_dir) and "tbflow-setup." in target:
                    found.append(f"{fd_dir.parent.name}: {(fd_dir.parent / 'comm').read_text().strip()} -> {target}")
        except OSError:
            continue
    return found


def test_no_process_keeps_the_setup_lock_and_setup_reruns_at_once(docker_ready):
    tmp = os.environ.get("TMPDIR", "/tmp")
    assert _holders(tmp) == [], "a process outlived setup.sh holding its lock"
    out = subprocess.run(["bash", str(ROOT / "scripts/setup.sh")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "waiting for another setup run" not in out.stdout + out.stderr
    assert _holders(tmp) == []
