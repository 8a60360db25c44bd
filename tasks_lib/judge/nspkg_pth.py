"""setuptools' namespace-package ``.pth`` lines (``*-nspkg.pth``), told from code that looks like them
(pure; ``runner_roles`` asks).

Python's ``site`` runs every ``.pth`` line that starts with ``import`` at each start, so such a line
is a startup hook: code the agent could hide there steers the runner. But ``pip install`` of a
package that setuptools built with a namespace package (protobuf 3's ``google``, ``backports.*``,
``zope.*``) writes one line per namespace, from setuptools' template, and Python runs it before
the verifier's pytest. Its statements only register the namespace in ``sys.modules`` and extend its
``__path__``; a line made of exactly those statements, in any of the template's versions, is
benign *when the names are not the standard library's nor the runner's*: the template called for
``json`` or ``_pytest`` puts a module of that name from site-packages into ``sys.modules`` before
the image's, which is a shadow. Anything else in the line (one more statement) is code.
"""

from __future__ import annotations

import re

_NAME = r"'([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)'"
_IDENT = r"'([A-Za-z_]\w*)'"
_ROOT = r"(?:sys\._getframe\(1\)\.f_locals\['sitedir'\]|'[\w./-]+')"
_MFS = r"(?:has_mfs and )?"
#: every statement setuptools' template has had (setuptools.namespaces; older: has_mfs, ie)
STATEMENTS = tuple(re.compile(s) for s in (
    r"import sys, types, os",
    r"has_mfs = sys\.version_info > \(3, 5\)",
    rf"p = os\.path\.join\({_ROOT}, \*\(((?:'[A-Za-z_]\w*', ?)*'[A-Za-z_]\w*',?)\)\)",
    r"ie = os\.path\.exists\(os\.path\.join\(p, ?'__init__\.py'\)\)",
    rf"importlib = {_MFS}__import__\('importlib\.util'\)",
    rf"{_MFS}__import__\('importlib\.machinery'\)",
    rf"m = {_MFS}sys\.modules\.setdefault\({_NAME}, importlib\.util\.module_from_spec\("
    r"importlib\.machinery\.PathFinder\.find_spec\('\1', \[os\.path\.dirname\(p\)\]\)\)\)",
    rf"m = (?:m or |not ie and )sys\.modules\.setdefault\({_NAME}, types\.ModuleType\('\1'\)\)",
    r"mp = \(m or \[\]\) and m\.__dict__\.setdefault\('__path__', ?\[\]\)",
    r"\(p not in mp\) and mp\.append\(p\)",
    rf"m and setattr\(sys\.modules\[{_NAME}\], {_IDENT}, m\)",
))


def is_namespace_line(line: str, shadowable: frozenset[str]) -> bool:
    """Whether ``line`` is made only of setuptools' namespace statements, for names whose top-level
    module is not in ``shadowable`` (the standard library's and the runner's modules)."""
    names: list[str] = []
    for statement in line.strip().split(";"):
        match = next((m for p in STATEMENTS if (m := p.fullmatch(statement.strip()))), None)
        if match is None:
            return False
        names += re.findall(r"\w+", " ".join(g or "" for g in match.groups()))
    return not any(n in shadowable for n in names)  # every part of a dotted name: fail closed
