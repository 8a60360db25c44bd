"""Shell lives in ``.sh`` files that shellcheck passes (the project's rule); nothing checked it, and
four example verifiers and two scripts had findings. scripts/setup.sh installs shellcheck."""

import shutil
import subprocess

from tbflow_process import ROOT


def test_every_committed_sh_file_passes_shellcheck():
    assert shutil.which("shellcheck"), "shellcheck is missing: scripts/setup.sh installs it"
    files = subprocess.run(["git", "ls-files", "-z", "*.sh"], cwd=ROOT, capture_output=True, check=True).stdout
    names = [n for n in files.decode().split("\0") if n]
    assert len(names) >= 10, names
    res = subprocess.run(["shellcheck", *names], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
