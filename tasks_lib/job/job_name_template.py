"""Job names rendered from a run's scheduled start: ``nightly-{date}`` -> ``nightly-2026-12-01``.

Why: an existing job of a name is *continued* (``tbflow resume`` semantics), so a nightly
deployment with a fixed ``job_name`` would resume last night's job every night instead of running
a new one (docs/deployments.md "Nightly runs"). A template renders from the flow run's *scheduled*
start time, which Prefect sets once per flow run: a retry of that run renders the same name and
continues its job; the next night's run renders a new one.

Two fields, both UTC, both fixed width so that names sort like their times:

* ``{date}`` -> ``2026-12-01``
* ``{datetime}`` -> ``2026-12-01T0300Z`` (minutes: schedules fire on whole minutes)

Anything else in braces is refused with one line naming the parameter. ``JOB_NAME_PATTERN`` is the
server-side pattern of a plain name; ``TEMPLATE_PATTERN`` also admits the fields, so the Prefect
server checks both before a run is created. ``template_regex`` matches every name one template
renders, which is how the trend and the diff find the earlier nights of a job (``flows/job/nightly.py``).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from tasks_lib.errors import InputError

#: a plain job directory name
JOB_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
FIELDS = {"date": "%Y-%m-%d", "datetime": "%Y-%m-%dT%H%MZ"}
_FIELD_RE = {"date": r"\d{4}-\d{2}-\d{2}", "datetime": r"\d{4}-\d{2}-\d{2}T\d{4}Z"}
_TOKEN = "|".join(re.escape("{" + f + "}") for f in FIELDS)
#: a plain name or a template of the fields (the rendered name is checked against the plain pattern)
TEMPLATE_PATTERN = rf"^(?:[A-Za-z0-9]|{_TOKEN})(?:[A-Za-z0-9._-]|{_TOKEN}){{0,127}}$"
_BRACED = re.compile(r"\{([^{}]*)\}")


def is_template(name: str | None) -> bool:
    """True when ``name`` holds a brace (a field, or a stray brace to refuse)."""
    return name is not None and ("{" in name or "}" in name)


def check_template(template: str, where: str = "job_name") -> None:
    """Raise ``InputError`` on ``where`` unless every brace of ``template`` is a known field."""
    unknown = [m.group(0) for m in _BRACED.finditer(template) if m.group(1) not in FIELDS]
    if unknown:
        raise InputError(where, f"{template!r}: unknown field {unknown[0]} in the template; "
                                f"use {{date}} or {{datetime}} (UTC)")
    if "{" in _BRACED.sub("", template) or "}" in _BRACED.sub("", template):
        raise InputError(where, f"{template!r}: a brace without its pair; fields are {{date}} and {{datetime}}")


def render_job_name(name: str | None, when: datetime, where: str = "job_name") -> str | None:
    """``name`` with its fields rendered from ``when`` (a plain name or None is returned as is)."""
    if name is None or not is_template(name):
        return name
    check_template(name, where)
    utc = when.astimezone(timezone.utc) if when.tzinfo else when.replace(tzinfo=timezone.utc)
    rendered = _BRACED.sub(lambda m: utc.strftime(FIELDS[m.group(1)]), name)
    if not re.match(JOB_NAME_PATTERN, rendered):
        raise InputError(where, f"{name!r} renders to {rendered!r}: use letters, digits, '.', '_' or '-' "
                                "(max 128), starting with a letter or digit")
    return rendered


def template_regex(template: str) -> re.Pattern[str]:
    """A regex matching exactly the names ``template`` renders, its fields as named groups."""
    check_template(template)
    parts, pos, seen = [], 0, set()
    for m in _BRACED.finditer(template):
        parts.append(re.escape(template[pos:m.start()]))
        field = m.group(1)
        parts.append(f"(?P<{field}>{_FIELD_RE[field]})" if field not in seen else f"(?P={field})")
        seen.add(field)
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("^" + "".join(parts) + "$")


def night_of(template: str, name: str) -> datetime | None:
    """The scheduled time ``name`` was rendered from by ``template``, or None if it was not."""
    m = template_regex(template).match(name)
    if m is None:
        return None
    fields = m.groupdict()
    if fields.get("datetime"):
        return datetime.strptime(fields["datetime"], FIELDS["datetime"]).replace(tzinfo=timezone.utc)
    if fields.get("date"):
        return datetime.strptime(fields["date"], FIELDS["date"]).replace(tzinfo=timezone.utc)
    return None


def template_stem(template: str) -> str:
    """The template without its fields, for artifact keys: ``nightly-{date}`` -> ``nightly``."""
    return _BRACED.sub("", template).strip("-_.") or "nightly"
