"""The jinja2 environment of tbflow's Markdown templates (``tasks_lib/report/templates/*.j2``).

Templates hold the layout; Python supplies data and filters. Autoescape is off because the
output is Markdown, not HTML: escaping is explicit, through the ``md``/``code``/``html`` filters.
``StrictUndefined`` makes a misspelt field fail the tests instead of rendering as nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import jinja2

from tasks_lib.cache_dir import cache_dir
from tasks_lib.report.md_format import FILTERS


@functools.cache
def bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept in the cache dir between commands: compiling the report templates
    took ~0.1 s of every job's end (bench/RESULTS.md, "Cold start"). jinja2 keys each entry by the
    template's name and source checksum and writes it atomically, so an edited template is compiled
    again and two commands at once are safe; an unwritable cache dir means compiling every time."""
    where = cache_dir() / "jinja2"
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(where))


def make_environment(filters: dict[str, Callable[..., str]]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("tasks_lib.report", "templates"),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=bytecode_cache(),
    )
    env.filters.update(FILTERS)
    env.filters.update(filters)
    return env


def render(env: jinja2.Environment, name: str, **context: object) -> str:
    """Render a template; runs of blank lines (from skipped sections) collapse to one."""
    text = env.get_template(name).render(**context)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"
