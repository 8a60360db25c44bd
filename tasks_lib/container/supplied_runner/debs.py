"""The Debian trixie packages the runner's interpreter is taken from, pinned by version and sha256.

Why Debian trixie: it ships CPython 3.13 built against a glibc (2.41) and OpenSSL (3.5) that
Debian keeps patched, as plain .debs anyone can fetch and check. Why not debootstrap: it resolves
and unpacks a whole system (about 2 minutes); the runner needs only python3.13, its standard
library and the shared libraries of its closure, so this list names exactly those packages
(amd64; name, version, sha256 and pool path taken from trixie's ``Packages`` index, as
``scripts/install-buildkit.sh`` does for BuildKit). Each file is downloaded once from
``$TBFLOW_DEBIAN_MIRROR`` (default http://deb.debian.org/debian), checked against its pin, kept
under tbflow's cache dir and unpacked with ``dpkg-deb -x`` (no maintainer script runs).

A Debian point release removes superseded versions from the pool; then the download fails with
its URL and the pins here need a refresh (the hardening's patch list is re-checked by the build).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

from tasks_lib.errors import RunnerUnavailable
from tasks_lib.file_sha256 import sha256_file

DEFAULT_MIRROR = "http://deb.debian.org/debian"
DOWNLOAD_TIMEOUT_SEC = 120


class Deb(NamedTuple):
    name: str
    version: str
    sha256: str
    pool_path: str


def _deb(name: str, version: str, sha256: str, source: str) -> Deb:
    upstream = version.split(":", 1)[-1]  # the epoch is not part of the file name
    prefix = source[:4] if source.startswith("lib") else source[0]
    return Deb(name, version, sha256, f"pool/main/{prefix}/{source}/{name}_{upstream}_amd64.deb")


#: python3.13 + its standard library, and every library in the closure of python3.13 and its
#: extension modules (libgcc-s1 and libstdc++6 for wheels with C++ extensions, such as numpy)
DEBS: tuple[Deb, ...] = (
    _deb("python3.13-minimal", "3.13.5-2+deb13u5", "c1fda9e7b1bf15b2fa75a238d8a8710e142fe14c722fc650c5fc614f078c9073",
         "python3.13"),
    _deb("libpython3.13-minimal", "3.13.5-2+deb13u5", "a4aa6a9a8c77f87bfe545e1d14ec42c001d189ace90e3aa75deec882b39dee49",
         "python3.13"),
    _deb("libpython3.13-stdlib", "3.13.5-2+deb13u5", "db161322a3481d2c0c3b9a3b9a03c3ab0e2b1718f54b88755fb4a3f939165b84",
         "python3.13"),
    _deb("libc6", "2.41-12+deb13u5", "b59b0625cd1a791375d40dab23a4d5d3d0641e3d0a773501becdc3725b7f99cf", "glibc"),
    _deb("libssl3t64", "3.5.9-1~deb13u1", "ffefb9af363e0e4592251b2533eb06453c8e470f7772e40263c4b2129251a6d5", "openssl"),
    _deb("zlib1g", "1:1.3.dfsg+really1.3.1-1+deb13u1", "8c27c342230503b73dfde629642c3b352e87b554e06d60cf58772f236a305ceb",
         "zlib"),
    _deb("libbz2-1.0", "1.0.8-6", "cba4cda04244b5e481bb15524bc3c983a7d1b6f330013b9b381706a2fcb65310", "bzip2"),
    _deb("liblzma5", "5.8.1-1+deb13u2", "b38acab30f295bf1066a6632e31cbd0a1980f2924b38040cda131d5dea5384ec", "xz-utils"),
    _deb("libzstd1", "1.5.7+dfsg-1", "2f6a2aeacfc925eba8b00ac9139bc4bfccf8cacb09eb93de067074b26948eef9", "libzstd"),
    _deb("libexpat1", "2.9.0-1~deb13u1", "feff874772cae904ae4d24e917b35664952bec4b4ae9100a4edda5a7fa746832", "expat"),
    _deb("libffi8", "3.4.8-2", "0ebdc340de33333639c3c63874cd4b15ac2e83dfa1ef3053b7eefaf4919f4f68", "libffi"),
    _deb("libsqlite3-0", "3.46.1-7+deb13u2", "0a459adaffd901109f7811ab65f58e7a957b4907d05539cf3d1184efdcde0468", "sqlite3"),
    _deb("libuuid1", "2.41.5-0+deb13u1", "c1bf4c4c3ff48c57fabf93307dfb56996b60cfa33927afc4158b5db36fb2721e", "util-linux"),
    _deb("libdb5.3t64", "5.3.28+dfsg2-9", "18d02510ee78b67e4504ba050176797a200ff24214a7cd318082ab60ad7bf3fc", "db5.3"),
    _deb("libncursesw6", "6.5+20250216-2", "47baa2e11579583654583a066b69bd5a5d2f22423081f707ed6c0c3ba6d538b7", "ncurses"),
    _deb("libtinfo6", "6.5+20250216-2", "8b9f6a7983e9418564e48a627518de4c03917b56efe68d7f3e93bd8fffa1cc10", "ncurses"),
    _deb("libgcc-s1", "14.2.0-19", "3c71917b490d1a17aed43196a2787a256ecf060526cdb20216a74bedc061b150", "gcc-14"),
    _deb("libstdc++6", "14.2.0-19", "ab1fa05837aa7a92aae748fd07a18a35f7d18bb4a71c4724fe2bbf0e32089de0", "gcc-14"),
)
#: the CPython these packages hold (checked against the unpacked interpreter by the build)
PYTHON_VERSION = "3.13.5"


def mirror() -> str:
    return os.environ.get("TBFLOW_DEBIAN_MIRROR", DEFAULT_MIRROR).rstrip("/")


def fetch_deb(deb: Deb, cache: Path) -> Path:
    """The pinned .deb under ``cache``, downloaded (and checked) the first time it is needed."""
    target = cache / Path(deb.pool_path).name
    if target.is_file() and sha256_file(target) == deb.sha256:
        return target
    url = f"{mirror()}/{deb.pool_path}"
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{deb.name}-", suffix=".tmp", dir=cache)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SEC) as resp:
            shutil.copyfileobj(resp, out)
        got = sha256_file(tmp)
        if got != deb.sha256:
            raise RunnerUnavailable(f"{url}: sha256 {got} is not the pinned {deb.sha256}")
        os.replace(tmp, target)
    except (urllib.error.URLError, OSError) as exc:
        raise RunnerUnavailable(f"cannot download {url} ({exc}); set TBFLOW_DEBIAN_MIRROR to a reachable "
                                "Debian mirror, or refresh the pins in supplied_runner/debs.py") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return target


def unpack_debs(cache: Path, root: Path) -> None:
    """Every pinned package unpacked into ``root`` (files only: no maintainer script runs)."""
    dpkg_deb = shutil.which("dpkg-deb")
    if dpkg_deb is None:
        raise RunnerUnavailable("dpkg-deb not found on PATH (apt-get install dpkg)")
    for deb in DEBS:
        path = fetch_deb(deb, cache)
        proc = subprocess.run([dpkg_deb, "-x", str(path), str(root)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)
        if proc.returncode != 0:
            raise RunnerUnavailable(f"dpkg-deb -x {path} failed: {proc.stderr.strip()[-2000:]}")


def pins_text() -> str:
    """The pins as text, for the cache key."""
    return "".join(f"{d.name} {d.version} {d.sha256} {d.pool_path}\n" for d in DEBS)
