"""The CLI harnesses' prelude (harnesses/cli/agent_prelude.sh) run alone with the host's plain
``sh``, no Docker: it keeps a variable the image sets, sets a default only where the variable is
unset or empty, creates the directories, writes each file as its content plus a newline byte for
byte (quotes, newlines, ``$``, backslashes and ``%`` are data, never shell code), refuses a
malformed variable name, and execs the argv in its own process."""

import os
import subprocess
from pathlib import Path

import pytest

from harnesses.cli.cli_harness import PRELUDE_SH, prelude_script, sh_prelude

SCRIPT = Path(__file__).resolve().parents[1] / "harnesses" / "cli" / PRELUDE_SH
CONTENT = 'a "quoted" \'word\'\n$HOME ${X:-y} `id` $(id)\\n \\ back\\slash 100% %s\n-n\n\n'
SHOW = 'printf "%s\\n" "$$" "$KEPT" "$SET" "$EMPTY" "$@"'


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(argv, proc.returncode, f"{proc.pid}\n{out}", err)


@pytest.mark.parametrize("form", ["file alone", "sh -c as sh_prelude builds it"])
def test_prelude_sets_defaults_writes_files_exactly_and_execs(tmp_path, form):
    dirs = [str(tmp_path / "a" / "b"), str(tmp_path / "c d")]
    files = [(f"{dirs[0]}/one.json", CONTENT), (f"{dirs[1]}/-two", "")]
    defaults = {"KEPT": "default", "SET": "/tmp/tbflow-x/set", "EMPTY": "filled"}
    argv = ["sh", "-c", SHOW, "sh", "a b", "--", "$X"]
    built = sh_prelude(dirs, files, argv, env_defaults=defaults)
    assert built[2] == SCRIPT.read_text(encoding="utf-8") == prelude_script()
    cmd = ["sh", str(SCRIPT), *built[4:]] if form == "file alone" else built
    env = {"PATH": os.environ["PATH"], "KEPT": "from the image", "EMPTY": ""}
    res = run(cmd, env)
    assert res.returncode == 0, res.stderr
    pid, own_pid, *shown = res.stdout.split("\n")
    assert own_pid == pid, "argv did not replace the prelude's shell (no exec)"
    assert shown == ["from the image", "/tmp/tbflow-x/set", "filled", "a b", "--", "$X", ""]
    assert (Path(dirs[0]) / "one.json").read_bytes() == (CONTENT + "\n").encode()
    assert (Path(dirs[1]) / "-two").read_bytes() == b"\n"


def test_prelude_refuses_a_malformed_variable_name(tmp_path):
    res = run(["sh", str(SCRIPT), "1", "BAD-NAME=x", "0", "0", "touch", str(tmp_path / "ran")], {})
    assert res.returncode == 2 and "not a variable name: BAD-NAME" in res.stderr
    assert not (tmp_path / "ran").exists()
    with pytest.raises(ValueError, match="not a variable name"):
        sh_prelude([], [], ["true"], env_defaults={"X;rm": "v"})
