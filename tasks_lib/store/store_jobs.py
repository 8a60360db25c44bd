"""A job named for reading (``tbflow report``, ``diff``): a local directory or a store URL.

``tbflow report s3://bucket/jobs/NAME`` used to mangle the URL into a path (``s3:/bucket/...``),
and a report on a trial machine's working copy reported only the trials that machine ran, with
no word about the rest. Both now read what the store holds first:

* a URL is pulled into this machine's working copy of the job (the one ``run`` and ``resume`` use,
  ``remote_store.working_root``), and the command reads that;
* a local directory whose ``job.json`` says it is the working copy of a store job (its
  ``location`` is ``URL (working copy host:/path)``) is brought up to date from that URL first;
  when the store cannot be read, the command still reads the copy but says, in a warning, that
  it shows only the trials recorded there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tasks_lib.errors import InputError
from tasks_lib.store.job_store import JOB_FILE
from tasks_lib.store.remote_store import WORKING_COPY, JobMirror, attach, is_url, split_job_url


@dataclass
class OpenedJob:
    """Where to read the job (``path``), its store when it has one, and a warning to show."""

    path: Path
    mirror: JobMirror | None = None
    warning: str | None = None


def store_url_of(job_dir: Path) -> str | None:
    """The store URL ``job_dir`` is a working copy of, from its ``job.json``; None for a plain job."""
    try:
        location = json.loads((job_dir / JOB_FILE).read_text(encoding="utf-8")).get("location") or ""
    except (OSError, ValueError, AttributeError):
        return None
    url = str(location).split(WORKING_COPY, 1)[0]
    return url if is_url(url) else None


def open_job(ref: str, where: str) -> OpenedJob:
    """The job ``ref`` names, with what its store holds pulled in; bad input is an ``InputError``
    on ``where`` (the argument's name)."""
    if is_url(ref):
        try:
            base, name = split_job_url(ref)
            mirror = attach(base, name)
            mirror.pull()
        except InputError as exc:
            raise InputError(where, exc.message) from None
        if not (mirror.local / JOB_FILE).is_file():
            raise InputError(where, f"{ref}: the store has no {JOB_FILE} there: not a tbflow job")
        return OpenedJob(mirror.local, mirror)
    path = Path(ref)
    url = store_url_of(path)
    if url is None:
        return OpenedJob(path)
    try:
        mirror = JobMirror(url, path)
        mirror.pull()
    except InputError as exc:
        return OpenedJob(path, warning=f"{path} is a working copy of {url}, which could not be read "
                                       f"({exc.message}): only the trials recorded in the copy are shown")
    return OpenedJob(path, mirror)
