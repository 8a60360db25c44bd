"""Records were written with ``mkstemp``'s mode 0600, so a teammate of the group could not read a
job on a shared jobs path. They now get what a plain ``open`` gives: 0666 less the umask."""

import os
import stat
import subprocess
import sys

from tasks_lib.store.job_store import process_umask, write_atomic
from tbflow_process import ROOT


def test_a_record_gets_the_mode_of_the_umask_not_0600(tmp_path):
    path = tmp_path / "jobs" / "j" / "job.json"
    write_atomic(path, "{}\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~process_umask()


def test_under_umask_002_the_group_may_write_and_others_read(tmp_path):
    path = tmp_path / "trial.json"
    code = ("import os, sys; os.umask(0o002); from tasks_lib.store.job_store import write_atomic, process_umask; "
            "assert process_umask() == 0o002; write_atomic(__import__('pathlib').Path(sys.argv[1]), 'x')")
    subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, check=True, env=dict(os.environ))
    assert stat.S_IMODE(path.stat().st_mode) == 0o664
    assert not list(tmp_path.glob(".trial.json.*")), "the temporary file was left behind"
