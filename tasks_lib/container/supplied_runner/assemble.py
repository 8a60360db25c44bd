"""Copy out of the unpacked packages only what the runner runs, then compile it and seal it.

Why copy, not mount the packages: the fewer files the runner holds, the fewer it can be made to
read. It holds ``bin/python3.13``, the standard library (without test, idlelib, tkinter,
turtledemo), the loader, and the ``DT_NEEDED`` closure of python3.13 and of every extension
module (the stdlib's and the wheels'), resolved in the packages' multiarch dirs only: a library
that only the host has never enters the runner. Bytecode is compiled here (the mount is
read-only) as unchecked-hash ``.pyc`` (PEP 552): never stale whatever the mtimes, and the same
bytes on every build, so the manifest's digest is reproducible.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tasks_lib.container.supplied_runner.harden import LOADER, MULTIARCH
from tasks_lib.errors import RunnerUnavailable

#: where Debian's ``site`` looks under the prefix; the wheels go there
SITE = "lib/python3/dist-packages"
STDLIB = "lib/python3.13"
#: the site dir of the runner's own venv (pyvenv.cfg): where a child ``python3`` looks for packages
VENV_SITE = "lib/python3.13/site-packages"
LEFT_OUT = ("test", "idlelib", "tkinter", "turtledemo")
ENTRY = "tbflow_pytest.py"
ENTRY_SOURCE = '''\
"""tbflow's pytest entry: started as python3.13 -I -S -B -X utf8 THIS pytest-args (no site at all)."""
import os
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib/python3/dist-packages"))
import pytest  # noqa: E402

sys.exit(pytest.console_main())
'''


def copy_interpreter(src: Path, out: Path) -> None:
    (out / "bin").mkdir(parents=True)
    (out / MULTIARCH).mkdir(parents=True)
    (out / SITE).mkdir(parents=True)
    shutil.copy2(src / "usr/bin/python3.13", out / "bin/python3.13")
    # readline stays out: pytest imports it at start, and GNU readline reads the container's
    # inputrc and terminfo (harden.py)
    ignore = shutil.ignore_patterns("__pycache__", "readline.*.so")
    stdlib = src / "usr" / STDLIB

    def skip(directory: str, names: list[str]) -> set[str]:
        top = set(LEFT_OUT) if Path(directory) == stdlib else set()
        return top | set(ignore(directory, names))

    shutil.copytree(stdlib, out / STDLIB, symlinks=True, ignore=skip)
    shutil.copy2(_find_lib(src, LOADER), out / MULTIARCH / LOADER)
    # what uvx's environment puts first on the tests' PATH: a test that runs `python3` gets the
    # runner's interpreter with the pinned wheels (its site dir's .pth), as under test.sh
    for alias in ("python3", "python"):
        (out / "bin" / alias).symlink_to("python3.13")
    (out / VENV_SITE).mkdir(parents=True, exist_ok=True)
    (out / VENV_SITE / "tbflow-runner.pth").write_text("../../python3/dist-packages\n")


def copy_closure(src: Path, out: Path) -> None:
    """Every library that python3.13 or an extension module needs, from the packages."""
    elfs = [out / "bin/python3.13", *(out / STDLIB / "lib-dynload").glob("*.so"), *(out / SITE).rglob("*.so*")]
    vendored = {p.name for p in (out / SITE).glob("*.libs/*")}  # wheels' own libs, found via $ORIGIN
    seen: set[str] = set()
    todo = [e for e in elfs if e.is_file() and not e.is_symlink()]
    while todo:
        for name in _needed(todo.pop()):
            if name in seen or name == LOADER or name in vendored:
                continue
            seen.add(name)
            lib = _find_lib(src, name)
            shutil.copy2(lib, out / MULTIARCH / name)
            todo.append(out / MULTIARCH / name)


def _find_lib(src: Path, name: str) -> Path:
    for d in ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu"):
        if (src / d / name).exists():
            return (src / d / name).resolve()
    raise RunnerUnavailable(f"{name} is needed by the runner but in none of the pinned Debian packages "
                            "(supplied_runner/debs.py): add the package that ships it")


def _needed(elf: Path) -> list[str]:
    proc = subprocess.run(["readelf", "-d", str(elf)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RunnerUnavailable(f"readelf -d {elf} failed (binutils installed?): {proc.stderr.strip()[-500:]}")
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", proc.stdout)


def run_runner(out: Path, args: list[str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """The runner's python on this host, through its own loader and libraries (before the mount exists)."""
    libs = out / MULTIARCH
    cmd = [str(libs / LOADER), "--inhibit-cache", "--library-path", str(libs), str(out / "bin/python3.13"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                          stdin=subprocess.DEVNULL, timeout=timeout)


def _start_runner(out: Path, args: list[str]) -> subprocess.Popen[bytes]:
    libs = out / MULTIARCH
    cmd = [str(libs / LOADER), "--inhibit-cache", "--library-path", str(libs), str(out / "bin/python3.13"), *args]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})


def python_version(out: Path) -> str:
    proc = run_runner(out, ["-I", "-S", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"])
    if proc.returncode != 0:
        raise RunnerUnavailable(f"the assembled python3.13 does not start on this host: {proc.stderr.strip()[-1000:]}")
    return proc.stdout.strip()


def compile_bytecode(out: Path, mount_at: str) -> None:
    """Unchecked-hash .pyc for the stdlib and the wheels, recorded with their paths under the mount."""
    # one compileall per core, each single-process: compileall's own -j workers import modules
    # and write timestamp .pyc of them, which would make the build unreproducible
    tops = sorted([*(out / STDLIB).iterdir(), *(out / SITE).iterdir()], key=lambda p: p.name)
    groups = [tops[i::max(1, min(4, os.cpu_count() or 1))] for i in range(max(1, min(4, os.cpu_count() or 1)))]
    procs = [_start_runner(out, ["-I", "-S", "-B", "-m", "compileall", "-q", "-f", "-j", "1", "--invalidation-mode",
                                 "unchecked-hash", "-s", str(out), "-p", mount_at, *map(str, group)])
             for group in groups if group]
    for proc in procs:
        proc.communicate(timeout=900)
    # compileall exits 1 for a file that is not valid 3.13 (some wheels ship such data files): the
    # check that matters is that every .pyc written is hash-based and unchecked (flags 1)
    bad = [p for p in out.rglob("*.pyc") if p.read_bytes()[4:8] != b"\x01\0\0\0"]
    if bad:
        raise RunnerUnavailable(f"{len(bad)} .pyc are not unchecked-hash (e.g. {bad[:3]}): the build would not "
                                "be reproducible")
    if not any(out.rglob("*.pyc")):
        raise RunnerUnavailable("compileall wrote no bytecode")


def write_entry(out: Path) -> None:
    (out / ENTRY).write_text(ENTRY_SOURCE)
    (out / "pytest.ini").write_text("[pytest]\n")


#: execute-only: the judge execs the runner without the capability to read these, so the kernel
#: makes it non-dumpable (judge/runner.c): no process of the agent's may trace it or open its memory
EXEC_ONLY = ("bin/python3.13", f"{MULTIARCH}/{LOADER}")


def seal(out: Path) -> None:
    """mtimes 0 (content is the identity), nothing writable; dirs and executables 0555, the
    interpreter and its loader 0111 (``EXEC_ONLY``)."""
    exec_only = {out / rel for rel in EXEC_ONLY}
    for dirpath, dirnames, filenames in os.walk(out, topdown=False):
        for name in filenames + dirnames:
            p = Path(dirpath) / name
            if p in exec_only:
                p.chmod(0o111)
            elif not p.is_symlink():
                p.chmod(0o555 if p.is_dir() or p.stat().st_mode & 0o111 else 0o444)
            os.utime(p, (0, 0), follow_symlinks=False)
    out.chmod(0o555)
    os.utime(out, (0, 0))
