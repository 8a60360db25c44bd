"""Exact-pinned npm packages, downloaded once on the host, hash-verified, cached atomically.

A harness runs an agent CLI at one exact version: a range or ``latest`` would let two runs of
the same job compare different agents. So versions are checked to be exact semver here, and
each package tarball is verified against its SRI integrity (``sha512-<base64>``) by tbflow
itself, not only by npm. Where a harness also pins the integrity, the registry must agree with
it and a cache hit needs no npm process at all.

npm is used only through its ordinary client (``npm view``, ``npm pack``), which knows its
configured registry; ``npm pack`` of a registry package runs no scripts. The unpacked package is
cached under ``<cache>/npm/<name>/<version>/<first 16 hex of the sha512>/package`` (see
``bundle_cache`` for the atomic build), with a manifest that records what was verified.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from tasks_lib.cache_dir import cache_dir
from tasks_lib.container.archives import check_member
from tasks_lib.errors import HarnessSetupError, UnsafeArchiveError

from harnesses.bundles.bundle_cache import build_atomically, read_valid

_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
)
_NPM_NAME = re.compile(r"(?:@[a-z0-9~-][a-z0-9._~-]*/)?[a-z0-9~-][a-z0-9._~-]*")
_SRI_SHA512 = re.compile(r"sha512-[A-Za-z0-9+/]{86}==")
NPM_TIMEOUT_SEC = 900


class VersionPinError(HarnessSetupError):
    """A harness version that is not one exact semver version (``latest``, ``^1.2``, ``1.x``...)."""

    def __init__(self, harness: str, value: str, why: str = "") -> None:
        self.harness = harness
        self.value = value
        super().__init__(f"harness {harness}: version {value!r} is not an exact version "
                         f"(want e.g. 1.2.3 or 1.2.3-beta.1){': ' + why if why else ''}")


class PackageFetchError(HarnessSetupError):
    """A harness package could not be resolved, downloaded, verified or unpacked."""


class NpmUnavailableError(PackageFetchError):
    """No ``npm`` on PATH and the package is not cached yet."""


class NpmCommandError(PackageFetchError):
    """An npm command failed; the message carries the end of npm's stderr."""

    def __init__(self, message: str, stderr: str = "") -> None:
        self.stderr = stderr
        super().__init__(message + (f"\nnpm stderr:\n{stderr}" if stderr else ""))


class IntegrityMismatchError(PackageFetchError):
    """A tarball, or the registry, disagrees with the integrity it must have."""


class UnsafePackageError(PackageFetchError):
    """A package tarball holds a member that would land outside its directory."""


def check_exact_version(harness: str, value: str) -> str:
    """Return ``value`` if it is one exact semver version, else raise ``VersionPinError``.

    Build metadata (``1.2.3+abc``) is refused too: npm ignores it, so it would pin nothing.
    """
    if not isinstance(value, str) or not _SEMVER.fullmatch(value):
        why = "build metadata is ignored by npm" if isinstance(value, str) and "+" in value else ""
        raise VersionPinError(harness, str(value), why)
    return value


def sri_digest(integrity: str) -> bytes:
    """The raw sha512 digest of an SRI string; other algorithms are not accepted."""
    for part in integrity.split():
        if _SRI_SHA512.fullmatch(part):
            return base64.b64decode(part[len("sha512-"):])
    raise IntegrityMismatchError(f"integrity {integrity!r} has no sha512 entry")


@dataclass(frozen=True)
class NpmPackage:
    """One exact npm package version; ``integrity`` optionally pins its tarball hash too."""

    name: str
    version: str
    integrity: str | None = None
    harness: str | None = None

    def __post_init__(self) -> None:
        if not _NPM_NAME.fullmatch(self.name):
            raise PackageFetchError(f"{self.name!r} is not a valid npm package name")
        check_exact_version(self.harness or self.name, self.version)
        if self.integrity is not None:
            sri_digest(self.integrity)

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


class BundleProvenance(BaseModel):
    """What a harness bundle was built from, for the job's provenance."""

    name: str
    version: str
    integrity: str
    source: str = "npm"
    files: int | None = None


def run_npm(args: list[str], cwd: Path, what: str, timeout: float = NPM_TIMEOUT_SEC) -> str:
    """Run ``npm <args>`` and return its stdout; any failure is a ``PackageFetchError``."""
    npm = shutil.which("npm")
    if npm is None:
        raise NpmUnavailableError(f"{what}: npm is not on PATH (it is needed once, to download the package)")
    env_extra = {"npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false"}
    try:
        proc = subprocess.run([npm, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **env_extra}, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise NpmCommandError(f"{what}: npm {args[0]} timed out after {timeout:g}s") from exc
    if proc.returncode != 0:
        summary = _npm_error_summary(proc.stdout)
        raise NpmCommandError(f"{what}: npm {args[0]} failed (exit {proc.returncode})"
                              + (f": {summary}" if summary else ""), proc.stderr.strip()[-4000:])
    return proc.stdout


def _npm_error_summary(stdout: str) -> str:
    try:
        err = json.loads(stdout).get("error", {})
        return f"{err.get('code', '')} {err.get('summary', '')}".strip()
    except (ValueError, AttributeError):
        return ""


def registry_integrity(pkg: NpmPackage, cwd: Path) -> str:
    """The integrity the registry publishes for ``pkg`` (``npm view <spec> dist.integrity``)."""
    out = run_npm(["view", pkg.spec, "dist.integrity", "--json"], cwd, f"resolving {pkg.spec}")
    try:
        value = json.loads(out) if out.strip() else None
    except ValueError:
        value = None
    if not isinstance(value, str):
        raise NpmCommandError(f"resolving {pkg.spec}: the registry has no single version {pkg.version} "
                              f"of {pkg.name} (npm view printed {out.strip()[:200]!r})")
    sri_digest(value)
    return value


def _entry_dir(pkg: NpmPackage, integrity: str) -> Path:
    return cache_dir() / "npm" / pkg.name / pkg.version / sri_digest(integrity).hex()[:16]


def _expect(pkg: NpmPackage, integrity: str) -> dict:
    return {"kind": "npm-package", "name": pkg.name, "version": pkg.version, "integrity": integrity}


def _cached(pkg: NpmPackage) -> Path | None:
    """A valid cache entry found without npm: the pinned one, or the only one for this version."""
    if pkg.integrity:
        entry = _entry_dir(pkg, pkg.integrity)
        return entry if read_valid(entry, _expect(pkg, pkg.integrity)) else None
    version_dir = cache_dir() / "npm" / pkg.name / pkg.version
    found = []
    for entry in sorted(version_dir.glob("[0-9a-f]*")) if version_dir.is_dir() else []:
        manifest = read_valid(entry, {"kind": "npm-package", "name": pkg.name, "version": pkg.version})
        if manifest and entry.name == sri_digest(manifest["integrity"]).hex()[:16]:
            found.append(entry)
    return found[0] if len(found) == 1 else None


def fetch_package(pkg: NpmPackage) -> Path:
    """The unpacked, verified package directory of ``pkg`` (downloaded on a cache miss)."""
    entry = _cached(pkg)
    if entry is not None:
        return entry / "package"
    cwd = cache_dir() / "npm"
    cwd.mkdir(parents=True, exist_ok=True)
    integrity = registry_integrity(pkg, cwd)
    if pkg.integrity and sri_digest(integrity) != sri_digest(pkg.integrity):
        raise IntegrityMismatchError(f"{pkg.spec}: the registry publishes integrity {integrity}, "
                                     f"but the harness pins {pkg.integrity}")
    entry = _entry_dir(pkg, integrity)
    build_atomically(entry, _expect(pkg, integrity), lambda tmp: _download_and_unpack(pkg, integrity, tmp))
    return entry / "package"


def provenance(package_dir: Path) -> BundleProvenance:
    """Provenance of a directory returned by ``fetch_package``, from its manifest."""
    manifest = json.loads((package_dir.parent / "manifest.json").read_text())
    return BundleProvenance(name=manifest["name"], version=manifest["version"], integrity=manifest["integrity"],
                            source="npm", files=len(manifest["files"]))


def _download_and_unpack(pkg: NpmPackage, integrity: str, tmp: Path) -> dict:
    dl = tmp / "download"
    dl.mkdir()
    out = run_npm(["pack", pkg.spec, "--pack-destination", str(dl), "--json", "--ignore-scripts"],
                  dl, f"downloading {pkg.spec}")
    tarball = _packed_file(out, dl, pkg)
    verify_tarball(tarball, integrity, pkg.spec)
    _unpack(tarball, tmp / "package", pkg.spec)
    shutil.rmtree(dl)
    return {"tarball": tarball.name}


def _packed_file(out: str, dl: Path, pkg: NpmPackage) -> Path:
    try:
        name = json.loads(out)[0]["filename"]
        candidate = dl / Path(name).name
        if candidate.is_file():
            return candidate
    except (ValueError, LookupError, TypeError):
        pass
    found = list(dl.glob("*.tgz"))
    if len(found) != 1:
        raise NpmCommandError(f"downloading {pkg.spec}: npm pack left {len(found)} tarballs")
    return found[0]


def verify_tarball(tarball: Path, integrity: str, what: str) -> None:
    """Raise ``IntegrityMismatchError`` unless the file's sha512 is the one in ``integrity``."""
    h = hashlib.sha512()
    with tarball.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.digest() != sri_digest(integrity):
        got = "sha512-" + base64.b64encode(h.digest()).decode()
        raise IntegrityMismatchError(f"{what}: tarball hash {got} does not match integrity {integrity}")


def _unpack(tarball: Path, dest: Path, what: str) -> None:
    """Unpack an npm tarball's single top directory (``package/``) into ``dest``, safely."""
    stage = dest.parent / "unpack"
    try:
        with tarfile.open(tarball, "r:gz") as tar:
            members = tar.getmembers()
            if not members:
                raise UnsafePackageError(f"{what}: empty tarball")
            top = members[0].name.split("/", 1)[0] or "/"
            for m in members:  # absolute, '..', outside the one top dir, device, escaping link
                check_member(m, top)
            tar.extractall(stage, members=members, filter="data")
    except UnsafeArchiveError as exc:
        raise UnsafePackageError(f"{what}: {exc.message}") from exc
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UnsafePackageError(f"{what}: cannot unpack {tarball.name}: {exc}") from exc
    (stage / top).rename(dest)
    shutil.rmtree(stage)
