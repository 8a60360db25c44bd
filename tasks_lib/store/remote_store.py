"""A job store behind an fsspec URL (``s3://bucket/prefix``, ``file://``, ``memory://``): the job
lives in the store, and each machine that runs or resumes it works in a local copy.

Why a local working copy and not fsspec everywhere (docs/deployments.md, "Shared job storage"):
trial stages write logs through local paths (Docker archives, tails, evidence files), and the
records are written atomically by rename, which object stores do not have. So the job directory
the code sees is a plain local directory, and this module keeps it in step with the store:

- **pull** (at plan time, and by a coordinator following its shards): ``job.json`` and every
  trial record (``trials/<id>/trial.json``, ``attempts/<id>/<n>/trial.json``) the local copy lacks
  or holds in another size. Logs stay in the store; planning, resuming and reports need only
  records. A record in the local copy that the store lacks (its upload failed or was cut off) is
  uploaded first, so nothing recorded on this machine is lost.
- **push**: a trial's whole directory right after its record is written, the record last, so a
  record in the store means its logs are there; ``job.json`` and the reports when they are
  written; a re-run trial's move to ``attempts/``; at the end of a run (or shard) the job-level
  logs (``gateway/``, ``.builds/``).

Credentials come only from the environment or the user's fsspec/boto configuration (``AWS_*``,
``AWS_ENDPOINT_URL``, ``~/.aws``); a URL carrying credentials is refused, so the URL — which is
recorded in ``job.json`` and shown in logs and reports — never holds a secret.

The local copy is ``$TBFLOW_STORE_CACHE`` (default ``stores`` in the cache dir,
``tasks_lib/cache_dir.py``) ``/<scheme>-<hash of the jobs URL>/<job name>``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tasks_lib.cache_dir import cache_dir
from tasks_lib.errors import InputError

_log = logging.getLogger(__name__)
URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
JOB_FILE = "job.json"
TRIAL_FILE = "trial.json"
REPORT_FILES = ("results.json", "report.md", "junit.xml", "report.html")
#: report.html's per-trial pages (tasks_lib/report/html), uploaded with the report files
REPORT_PAGES = "report-trials"
#: what a trial page shows beyond the tails: fetched for every trial, passed or not
_TRIAL_PAGE_INPUTS = ("trajectory.json", "verifier/ctrf.json")
#: the job's price table (``tbflow run --prices``), read by every worker that writes a trajectory
PRICES_FILE = "prices.json"
#: job-level log dirs: the model gateway's request logs (one file per host and process), build-ahead logs
JOB_LOG_DIRS = ("gateway", ".builds")
#: object stores with buckets: a missing bucket is a user error, not something to create
_BUCKETED = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss"}


def is_url(jobs_dir: str) -> bool:
    """A jobs dir given as ``scheme://...`` (a local path never has ``://``)."""
    return bool(URL_RE.match(jobs_dir))


def split_job_url(job_url: str) -> tuple[str, str]:
    """``s3://b/p/name`` → (``s3://b/p``, ``name``)."""
    base, _, name = job_url.rstrip("/").rpartition("/")
    if not name or "://" not in base or base.endswith(":/"):
        raise InputError("JOB_DIR", f"{job_url}: name a job inside the store, e.g. s3://bucket/jobs/NAME")
    return base, name


def copies_root() -> Path:
    """Where this machine keeps its working copies of jobs in stores: ``$TBFLOW_STORE_CACHE``
    (each test process keeps its own), else ``stores`` in tbflow's cache dir."""
    own = os.environ.get("TBFLOW_STORE_CACHE")
    return Path(own) if own else cache_dir() / "stores"


def working_root(jobs_url: str) -> Path:
    """The local directory holding this machine's working copies of the jobs under ``jobs_url``
    (a pure function of the URL: a crash hook can find it without reaching the store)."""
    url = jobs_url.rstrip("/")
    return copies_root() / f"{urlsplit(url).scheme}-{hashlib.sha256(url.encode()).hexdigest()[:16]}"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text[:300]}"


def _filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it); options come from the environment and fsspec config."""
    import fsspec

    parts = urlsplit(url)
    if "@" in parts.netloc:
        raise InputError("--jobs-dir", f"{parts.scheme}://…@{parts.netloc.rpartition('@')[2]}: credentials in the "
                         "URL are refused; give them in the environment (e.g. AWS_ACCESS_KEY_ID) or fsspec config")
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise InputError("--jobs-dir", f"{url}: not a usable storage URL ({_one_line(exc)})") from exc
    return fs, path.rstrip("/")


def check_store(jobs_url: str) -> None:
    """Reach the store once, so a bad URL, a missing bucket or an unreachable endpoint is a
    one-line input error before anything is written."""
    fs, root = _filesystem(jobs_url)
    bucketed = urlsplit(jobs_url).scheme in _BUCKETED
    if not root.strip("/"):
        raise InputError("--jobs-dir", f"{jobs_url}: name a place in the store, e.g. s3://BUCKET/PREFIX")
    try:
        if bucketed:
            fs.ls(root.split("/")[0], detail=False)
        else:
            fs.makedirs(root, exist_ok=True)
    except FileNotFoundError as exc:
        raise InputError("--jobs-dir", f"{jobs_url}: the bucket {root.split('/')[0]!r} does not exist") from exc
    except Exception as exc:  # noqa: BLE001 - any failure to reach the store is the user's setting
        raise InputError("--jobs-dir", f"{jobs_url}: cannot reach the store: {_one_line(exc)}") from exc


#: what ``JobMirror.describe`` writes after the store URL (``store_jobs.store_url_of`` reads it back)
WORKING_COPY = " (working copy "


class JobMirror:
    """One job's place in the store (``url``) and this machine's working copy (``local``)."""

    def __init__(self, url: str, local: Path) -> None:
        self.url = url.rstrip("/")
        self.local = Path(local)
        self.fs, self.root = _filesystem(self.url)
        self._failed: set[str] = set()  # trial ids (or "" for top-level files) whose upload failed
        self._guard = threading.Lock()

    def _remote(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def _records(self) -> dict[str, int]:
        """Relative path → size of every record and ``job.json`` in the store."""
        self.fs.invalidate_cache()
        out: dict[str, int] = {}
        for path, info in self.fs.find(self.root, detail=True).items():
            rel = path[len(self.root) + 1:]
            record = rel.endswith("/" + TRIAL_FILE) and rel.split("/")[0] in ("trials", "attempts")
            if rel in (JOB_FILE, PRICES_FILE) or record:
                out[rel] = int(info.get("size") or 0)
        return out

    def pull(self) -> None:
        """Bring the store's records into the local copy (after uploading local records it lacks)."""
        try:
            remote = self._records()
            for rec in sorted(self.local.glob(f"trials/*/{TRIAL_FILE}")):
                rel = rec.relative_to(self.local).as_posix()
                tid = rec.parent.name
                tries = sum(1 for r in remote if r.startswith(f"attempts/{tid}/"))
                # not when the store moved that trial's try to attempts/ since (a re-run elsewhere)
                if rel not in remote and tries == len(list(self.local.glob(f"attempts/{tid}/*/{TRIAL_FILE}"))):
                    _log.warning("uploading %s: recorded here but not yet in %s", rel, self.url)
                    self._push_trial(tid)
                    remote[rel] = rec.stat().st_size
            for rel, size in sorted(remote.items()):
                dest = self.local / rel
                if dest.is_file() and dest.stat().st_size == size:
                    continue
                if rel.startswith("trials/") and dest.parent.is_dir():
                    shutil.rmtree(dest.parent)  # the store's try wins; no stale log stays next to its record
                self._get(rel)
                if rel.startswith("trials/"):
                    self._get_report_inputs(rel)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise InputError("--jobs-dir", f"{self.url}: cannot read the job from the store: {_one_line(exc)}") from exc

    def pull_trial_files(self) -> None:
        """Every file under ``trials/`` the working copy lacks (logs, trajectories): what an export
        copies. ``pull`` brings only records and the tails a report quotes; an export needs all."""
        try:
            self.fs.invalidate_cache()
            for path in sorted(self.fs.find(f"{self.root}/trials")):
                rel = path[len(self.root) + 1:]
                if ".." not in rel.split("/") and not (self.local / rel).is_file():
                    self._get(rel)
        except Exception as exc:  # noqa: BLE001
            raise InputError("JOB", f"{self.url}: cannot read the trials' files from the store: {_one_line(exc)}") from exc

    def _get(self, rel: str) -> None:
        dest = self.local / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.pull")
        self.fs.get_file(self._remote(rel), str(tmp))
        os.replace(tmp, dest)

    def _get_report_inputs(self, record_rel: str) -> None:
        """The logs a report quotes for a trial that did not pass (the verifier's output, the
        evidence of an invalid verdict), so a report written on this machine shows their tails;
        and for every trial its trajectory and CTRF file when it has them (its report.html page)."""
        trial = record_rel.rsplit("/", 1)[0]
        for rel in _TRIAL_PAGE_INPUTS:
            try:
                self._get(f"{trial}/{rel}")
            except FileNotFoundError:
                continue
        try:
            rec = json.loads((self.local / record_rel).read_text(encoding="utf-8"))
            v = rec.get("validity") or {}
            reward = v.get("reward")
            if v.get("status") == "scored" and (reward is None or reward >= 1):
                return
            wanted = [(rec.get("verifier") or {}).get("stdout_log"), v.get("evidence")]
        except (OSError, ValueError, AttributeError):
            return
        for rel in {w for w in wanted if isinstance(w, str) and w and not w.startswith("/") and ".." not in w}:
            for candidate in (f"{trial}/{rel}", rel):  # trial-relative, or job-relative (a build log)
                try:
                    self._get(candidate)
                    break
                except FileNotFoundError:
                    continue

    def fetch_record(self, trial_id: str) -> None:
        """Bring one trial's record from the store if it has one (a shard asking whether another
        shard run recorded it meanwhile). Never raises: unknown counts as not recorded."""
        rel = f"trials/{trial_id}/{TRIAL_FILE}"
        try:
            if not (self.local / rel).is_file():
                self._get(rel)
        except FileNotFoundError:
            pass
        except Exception as exc:  # noqa: BLE001
            _log.warning("could not ask %s whether %s is recorded: %s", self.url, trial_id, _one_line(exc))

    def refresh(self) -> None:
        """``pull`` for a follower (a coordinator polling its shards): a failure is logged, not raised."""
        try:
            self.pull()
        except InputError as exc:
            _log.warning("%s", exc.message)

    def _push_trial(self, trial_id: str) -> None:
        d = self.local / "trials" / trial_id
        files = sorted(p for p in d.rglob("*") if p.is_file() and not p.is_symlink())
        record = d / TRIAL_FILE
        for f in [p for p in files if p != record] + ([record] if record.is_file() else []):
            self.fs.put_file(str(f), self._remote(f.relative_to(self.local).as_posix()))

    def trial_recorded(self, trial_id: str) -> None:
        """Upload a trial's dir now that its record is written. Never raises: a failure is logged
        and retried by ``finish`` (the record stays in the local copy and is uploaded by the next
        pull on this machine)."""
        try:
            self._push_trial(trial_id)
            with self._guard:
                self._failed.discard(trial_id)
        except Exception as exc:  # noqa: BLE001
            with self._guard:
                self._failed.add(trial_id)
            _log.warning("could not upload trial %s to %s (will retry): %s", trial_id, self.url, _one_line(exc))

    def push_top(self) -> None:
        """Upload ``job.json`` and the report files that exist. Never raises (see ``trial_recorded``)."""
        try:
            pages = sorted((self.local / REPORT_PAGES).glob("*.html"))
            for name in (JOB_FILE, PRICES_FILE, *(p.relative_to(self.local).as_posix() for p in pages), *REPORT_FILES):
                if (self.local / name).is_file():
                    self.fs.put_file(str(self.local / name), self._remote(name))
            with self._guard:
                self._failed.discard("")
        except Exception as exc:  # noqa: BLE001
            with self._guard:
                self._failed.add("")
            _log.warning("could not upload job.json/reports to %s (will retry): %s", self.url, _one_line(exc))

    def archived(self, trial_id: str, n: int) -> None:
        """A recorded trial was moved to ``attempts/<id>/<n>`` locally: move it in the store too,
        so no machine takes the old record for the new run's."""
        src, dest = self._remote(f"trials/{trial_id}"), self._remote(f"attempts/{trial_id}/{n}")
        self.fs.invalidate_cache()
        if self.fs.exists(src):
            self.fs.copy(src, dest, recursive=True)
            self.fs.rm(src, recursive=True)

    def push_job_logs(self) -> None:
        """Upload the job-level logs (the model gateway's request logs, image build-ahead logs).
        Never raises (see ``trial_recorded``)."""
        try:
            for sub in JOB_LOG_DIRS:
                for f in sorted((self.local / sub).rglob("*")):
                    if f.is_file() and not f.is_symlink():
                        self.fs.put_file(str(f), self._remote(f.relative_to(self.local).as_posix()))
            with self._guard:
                self._failed.discard("logs")
        except Exception as exc:  # noqa: BLE001
            with self._guard:
                self._failed.add("logs")
            _log.warning("could not upload the job's logs to %s (will retry): %s", self.url, _one_line(exc))

    def finish(self) -> None:
        """Upload the job-level logs, retry every failed upload; ``InputError`` naming
        ``--jobs-dir`` if one still fails."""
        self.push_job_logs()
        with self._guard:
            failed = sorted(self._failed)
        for tid in failed:
            if tid == "":
                self.push_top()
            elif tid == "logs":
                self.push_job_logs()
            else:
                self.trial_recorded(tid)
        with self._guard:
            left = sorted(self._failed)
        if left:
            raise InputError("--jobs-dir", f"{self.url}: {len(left)} upload(s) failed ({', '.join(left)[:200]}); "
                             f"they are kept in {self.local}: run the job again on this machine to upload them")

    def describe(self, local_path: Path | None = None) -> str:
        """``s3://.../job[/sub] (working copy host:/path)``."""
        import socket

        rel = Path(local_path).resolve().relative_to(self.local.resolve()).as_posix() if local_path else "."
        where = self.url if rel == "." else f"{self.url}/{rel}"
        return f"{where}{WORKING_COPY}{socket.gethostname()}:{Path(local_path or self.local).resolve()})"


_mirrors: dict[str, JobMirror] = {}
_mirrors_guard = threading.Lock()


def attach(jobs_url: str, name: str) -> JobMirror:
    """The mirror of job ``name`` under ``jobs_url`` (registered for its local copy)."""
    local = working_root(jobs_url) / name
    m = JobMirror(f"{jobs_url.rstrip('/')}/{name}", local)
    with _mirrors_guard:
        _mirrors[str(local.resolve())] = m
    return m


def mirror_for(path: str | os.PathLike) -> JobMirror | None:
    """The mirror whose working copy is ``path`` or holds it, None for a plain local job."""
    if not _mirrors:
        return None
    p = Path(path).resolve()
    with _mirrors_guard:
        for candidate in (p, *p.parents):
            m = _mirrors.get(str(candidate))
            if m is not None:
                return m
    return None
