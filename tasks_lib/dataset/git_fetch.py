"""Fetching exactly some paths of one commit of a git repository, with the ``git`` command.

One shallow (depth 1), blob-filtered, sparse fetch per (repository, commit): ``git init``, a
no-cone sparse checkout of the task paths, ``git fetch --depth 1 origin <sha>``, ``git checkout``.
Only the task paths are ever written, so a dataset of 3 tasks in a repository of 300 costs 3.

A commit must be a full SHA (40 or 64 hex digits): a branch or tag can move, so the same name would
run other tasks another day. ``allow_unpinned`` lets a ref through; the SHA it resolved to is
returned so it is recorded. Git never prompts (``GIT_TERMINAL_PROMPT=0``): a repository that
needs credentials fails at once with one line naming it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tasks_lib.errors import InputError

FULL_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
GIT_TIMEOUT_SEC = 1800


class GitError(Exception):
    """A git command failed; the message is its last line of error output."""


def is_full_sha(ref: str | None) -> bool:
    return bool(ref) and FULL_SHA.match(ref or "") is not None


def require_pinned(label: str, git_url: str, ref: str | None, allow_unpinned: bool) -> str:
    """``ref`` when it is a full SHA (or unpinned refs are allowed); else ``InputError`` saying why."""
    if is_full_sha(ref):
        return str(ref)
    if not ref:
        if allow_unpinned:
            return "HEAD"
        raise InputError("DATASET", f"{label}: {git_url} has no commit pinned (git_commit_id); "
                                    "use --allow-unpinned to take its default branch and record the commit")
    if allow_unpinned:
        return ref
    raise InputError("DATASET", f"{label}: {git_url} is pinned to {ref!r}, not a full commit SHA, so it could "
                                "change under the same name; use --allow-unpinned to fetch it and record the commit")


def _git(args: list[str], cwd: Path) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1", "LC_ALL": "C"}
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_SEC, stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise GitError("the git command is not installed (datasets by name are fetched with git)") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} took more than {GIT_TIMEOUT_SEC} s") from exc
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("warning:")]
        raise GitError(lines[-1] if lines else f"git {args[0]} exited {proc.returncode}")
    return proc.stdout


def fetch_paths(git_url: str, ref: str, paths: list[str], dest: Path, dirs: bool = True) -> str:
    """Check out ``paths`` of ``ref`` of ``git_url`` into ``dest`` (created); return the commit SHA.

    ``GitError`` when the repository cannot be reached or lacks the commit; ``FileNotFoundError``
    naming a path that the commit does not have as a directory (``dirs``: each path must be one).
    """
    dest.mkdir(parents=True)
    _git(["init", "-q"], dest)
    _git(["remote", "add", "origin", git_url], dest)
    _git(["config", "core.sparseCheckout", "true"], dest)
    patterns = "".join(f"/{p.strip('/')}/\n/{p.strip('/')}\n" for p in paths)
    (dest / ".git" / "info" / "sparse-checkout").write_text(patterns, encoding="utf-8")
    _git(["fetch", "-q", "--depth", "1", "--filter=blob:none", "origin", ref], dest)
    sha = _git(["rev-parse", "FETCH_HEAD"], dest).strip()
    _git(["checkout", "-q", "--detach", sha], dest)
    for p in paths if dirs else []:
        if not (dest / p).is_dir():
            raise FileNotFoundError(p)
    return sha


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a checked-out task (links kept as links) without any ``.git``."""
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
