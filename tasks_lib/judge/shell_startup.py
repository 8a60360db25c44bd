"""Files a shell sources (``~/.bashrc``, ``~/.local/bin/env``, ``/etc/profile.d/*``): what they can
do to the runner test.sh builds (pure; split from ``runner_roles``).

A sourced file runs in test.sh's own shell, so a command or function there is the runner's. Plain
variable assignments are honest work (an installer's PATH snippet), except the variables that
steer the runner without a file tbflow sees as one (issue 38: ``PYTEST_ADDOPTS`` or
``LD_PRELOAD`` exported from a file test.sh sources counted as benign): the loader's, pytest's,
Python's start-up, pip's and uv's index settings, the CA bundles, ``BASH_ENV``. A ``PATH`` it
exports is part of the environment test.sh builds: the directories it names are PATH dirs for the
role rules, so a ``pytest`` planted in one is a runner command (``exported_path_dirs``).
"""

from __future__ import annotations

import re
from typing import Iterable

#: a shell word that expands no command: quoted, or bare, with ``$VAR``/``${VAR...}`` only (no
#: ``$(...)``, backquotes or ``$((...))``); possessive, so a hostile line is judged in linear time
_DQ = r'"[^"`\\$]*+(?:\$\{?\w++\}?[^"`\\$]*+)*+"'
_BARE = r"""[^\s;&|`'"()<>$]*+(?:\$\{?\w++\}?[^\s;&|`'"()<>$]*+)*+"""
_VALUE = rf"""(?:{_DQ}|'[^']*+'|{_BARE})"""
SHELL_BENIGN = re.compile(rf"""(\#.*|(export\s++)?[A-Za-z_]\w*+={_VALUE}|export(\s++[A-Za-z_]\w*+)++|
    case\ ":\$\{{?PATH\}}?:"\ in|\*:"[^"`$]*+(\$\{{?HOME\}}?[^"`$]*+)?":\*\)|;;|\*\)|esac|
    if\s++\[\s++-[defrsxLh]\s++{_VALUE}\s++\]\s*+;?\s*+(then)?|then|else|fi|
    (\.|source)\ "?\$\{{?HOME\}}?/(\.local/bin/env|\.cargo/env)"?)""", re.X)
#: an alias definition: inert where bash expands no alias (a script, ``expand_aliases`` off)
SHELL_ALIAS = re.compile(rf"alias\s++[\w.:+-]++={_VALUE}")
#: variables that steer the runner by themselves, set or exported
STEERING = re.compile(
    r"(?:export\s+|.*\s)?(LD_\w+|PYTEST_\w+|PYTHONHOME|PYTHONSTARTUP|PYTHONINSPECT|PYTHONEXECUTABLE|BASH_ENV|ENV|"
    r"PIP_(?!BREAK_SYSTEM_PACKAGES|NO_CACHE_DIR|DISABLE_PIP_VERSION_CHECK|ROOT_USER_ACTION|NO_WARN_SCRIPT_LOCATION)\w+|"
    r"UV_\w+|SSL_CERT_\w+|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|OPENSSL_\w+)(=|\s|$)")
_PATH_SET = re.compile(r"(?:export\s+)?PATH=(.*)")


def sourced_lines_benign(data: bytes | None, image: bytes | None, aliases_inert: bool) -> bool:
    """Whether every line the agent added (to the image's version, if any) only sets variables
    that steer nothing (``STEERING``), is an ``if [ -d DIR ]`` around such lines, the PATH
    snippet installers such as uv's and rustup's write, or, when ``aliases_inert``, an alias.
    ``data`` None (unknown, or longer than the rules read): not benign."""
    if data is None:
        return False
    had = {ln.strip() for ln in (image or b"").decode("utf-8", "replace").splitlines()}
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if not line or line in had or line.startswith("#!"):
            continue
        if STEERING.match(line) and not line.startswith("#"):
            return False
        if not SHELL_BENIGN.fullmatch(line) and not (aliases_inert and SHELL_ALIAS.fullmatch(line)):
            return False
    return True


def exported_path_dirs(texts: Iterable[str], home: str) -> tuple[str, ...]:
    """The absolute directories the ``PATH=`` assignments of ``texts`` name (``$HOME`` expanded;
    ``$PATH`` and other variables left out)."""
    out: list[str] = []
    for text in texts:
        for line in text.splitlines():
            m = _PATH_SET.fullmatch(line.strip())
            if m is None:
                continue
            value = m.group(1).strip().strip("\"'").replace("${HOME}", home).replace("$HOME", home)
            out += [d.rstrip("/") or "/" for d in value.split(":") if d.startswith("/") and d not in out]
    return tuple(dict.fromkeys(out))
