"""Make the runner read nothing of the container it runs in but data: the patches and why.

The runner is bind-mounted read-only into a container where the agent was root. Paths compiled
into its loader, libc and libcrypto would make them read the container's files (and so run the
agent's code): ``/etc/ld.so.preload`` (a library loaded into every process), the loader's cache
and system library dirs (a library found there first, an NSS module), ``/etc/nsswitch.conf``
(which NSS modules to load), locale and gconv dirs (gconv modules are code), nscd's socket, and
OpenSSL's ``openssl.cnf`` (which loads providers and engines, also code). Each whole
NUL-terminated string is replaced by a path of the same length under ``/sys``, which no process
can create files in (Docker mounts sysfs read-only in an unprivileged container): the lookup
always fails and the built-in default applies. A string that is not found means a build whose
paths we do not know: the build refuses rather than ship a runner that only looks hardened.

The rest (``harden_tree``): python3.13's PT_INTERP and RPATH name the runner's own loader and
libraries (a test that runs ``sys.executable`` must not get the container's glibc), absolute
symlinks go (Debian's ``sitecustomize.py -> /etc/python3.13/...`` would name the container's
file), ``readline`` must be absent (``assemble.py`` never copies it: pytest imports it, and GNU
readline reads the container's inputrc and terminfo), an empty ``lib/python313.zip`` stops
CPython's landmark search before the agent's ``/opt/tbflow/lib/python313.zip``, and
``pyvenv.cfg`` turns off every user and system site dir.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

from tasks_lib.errors import RunnerUnavailable

MULTIARCH = "lib/x86_64-linux-gnu"
LOADER = "ld-linux-x86-64.so.2"

PATCHES: dict[str, tuple[str, ...]] = {
    LOADER: ("/etc/ld.so.preload", "/etc/ld.so.cache", "/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/",
             "/lib/", "/usr/lib/"),
    "libc.so.6": ("/etc/nsswitch.conf", "/usr/lib/x86_64-linux-gnu/gconv",
                  "/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache", "/usr/lib/locale",
                  "/usr/lib/locale/locale-archive",
                  "/var/run/nscd/so"),  # nscd's socket: the code appends "cket" to these 16 bytes
    "libcrypto.so.3": ("/usr/lib/ssl", "/usr/lib/ssl/cert.pem", "/usr/lib/ssl/certs", "/usr/lib/ssl/private",
                       "/usr/lib/ssl/ct_log_list.cnf", "/usr/lib/x86_64-linux-gnu/engines-3",
                       "/usr/lib/x86_64-linux-gnu/ossl-modules"),
}


def inert(path: str) -> str:
    """A path of the same length under read-only ``/sys`` that does not exist (a dir stays a dir)."""
    n = len(path)
    if n < 5:
        raise ValueError(f"{path!r} is too short to point under /sys")
    if path.endswith("/"):
        return "/sys/" if n == 5 else "/sys/" + "-" * (n - 6) + "/"
    return "/sys/" + "-" * (n - 5)


def patch_bytes(data: bytes, strings: tuple[str, ...], what: str) -> tuple[bytes, int]:
    """``data`` with each whole string made inert, and the count of places changed.

    A whole string: followed by NUL and not preceded by a printable byte (ld.so keeps a second
    copy of its search dirs right after a non-NUL byte, which the lookbehind also accepts).
    """
    out = bytearray(data)
    changed = 0
    for s in strings:
        old, new = s.encode(), inert(s).encode()
        hits = [m.start() for m in re.finditer(rb"(?<![\x21-\x7e])" + re.escape(old) + rb"(?=\0)", bytes(out))]
        if not hits:
            raise RunnerUnavailable(f"{what}: the string {s!r} is not in it: a build whose paths tbflow does not "
                                    "know, refusing to build a runner that only looks hardened")
        for off in hits:
            out[off:off + len(old)] = new
        changed += len(hits)
    return bytes(out), changed


def patch_libraries(libdir: Path) -> None:
    for name, strings in PATCHES.items():
        path = libdir / name
        data, _ = patch_bytes(path.read_bytes(), strings, name)
        path.chmod(0o755)
        path.write_bytes(data)


def set_interpreter(python: Path, mount_at: str) -> None:
    """python3.13 started directly (``sys.executable`` in a test) uses the runner's loader and libs."""
    patchelf = shutil.which("patchelf")
    if patchelf is None:
        raise RunnerUnavailable("patchelf not found on PATH (apt-get install patchelf; scripts/setup.sh does)")
    libs = f"{mount_at}/{MULTIARCH}"
    proc = subprocess.run([patchelf, "--set-interpreter", f"{libs}/{LOADER}", "--force-rpath", "--set-rpath", libs,
                           str(python)], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    if proc.returncode != 0:
        raise RunnerUnavailable(f"patchelf on {python} failed: {proc.stderr.strip()[-1000:]}")


def harden_tree(root: Path, mount_at: str) -> None:
    """Everything but the byte patches and the venv file (written after compileall: it names the mount)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink() and os.readlink(p).startswith("/"):
                p.unlink()
    if any((root / "lib/python3.13/lib-dynload").glob("readline.*.so")):
        raise RunnerUnavailable("readline is in the runner (assemble.py leaves it out): it reads the container's inputrc")
    zipfile.ZipFile(root / "lib/python313.zip", "w").close()
    patch_libraries(root / MULTIARCH)
    set_interpreter(root / "bin/python3.13", mount_at)


def write_venv_cfg(root: Path, mount_at: str) -> None:
    """A child started as ``sys.executable`` gets ``site``; this keeps it to the runner's own dirs."""
    (root / "pyvenv.cfg").write_text(f"home = {mount_at}/bin\ninclude-system-site-packages = false\n")
