"""What the container's own runner loads, derived from the image's files (pure over a reader; issue
38: "what counts as the runner is derived from what that runner loads, not from a name list").

A test.sh that runs the image's pytest loads more than pytest's own packages: the distributions
pytest requires (Debian's pytest 7.2 imports ``attr``, ``packaging``, ``iniconfig``, ``pluggy``),
the plug-ins its ``[pytest11]`` entry points name and what those require, and at every start of
the interpreter the modules Python's ``site`` imports: ``sitecustomize``/``usercustomize`` (as a
module or a package), what the image's ``sitecustomize`` imports (Debian's tries
``apport_python_hook``), and the ``import`` lines of the image's ``.pth`` files. A module of one of
those names the agent planted anywhere on ``sys.path`` (an earlier dist-packages directory, a
package named like a plug-in), or changed in place, is a runner file.

Everything is read from the image's layers on the host (``ImageFiles``), never by running the
image's Python: the agent may have changed it, and the image's own files are what the runner
starts from. Each file is read bounded; what cannot be read or parsed adds nothing here (the
names the role rules always count, ``runner_roles.RUNNER_MODULES``, stay).
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

#: reads the image's version of a path (at most ``limit`` bytes; None: absent) / lists a directory
Read = Callable[[str, int], bytes | None]
Names = Callable[[str], set[str]]
#: the most of one metadata file read
META_LIMIT = 1 << 20
#: modules ``site`` imports by name at every start, wherever on ``sys.path`` they are
STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})
#: the distributions whose closure is the runner of a test.sh that runs the image's pytest
ROOTS = frozenset({"pytest"})
_IMPORT = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", re.M)
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def site_dirs(names: Names) -> list[str]:
    """The image's site directories: Debian's shared one and each Python's own."""
    out = ["/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages"]
    for base in ("/usr/lib", "/usr/local/lib"):
        for py in sorted(n for n in names(base) if re.fullmatch(r"python3\.\d+", n)):
            out += [f"{base}/{py}/site-packages", f"{base}/{py}/dist-packages"]
    return out


class _Dist:
    """One installed distribution's metadata directory (``*.dist-info`` or ``*.egg-info``)."""

    def __init__(self, site: str, meta: str, read: Read) -> None:
        self.dir = f"{site}/{meta}"
        self.egg = meta.endswith(".egg-info")
        self.read = read
        head = self._text("PKG-INFO" if self.egg else "METADATA")
        found = re.search(r"^Name:\s*(\S+)", head, re.M)
        self.name = normalized(found.group(1) if found else re.split(r"-\d", meta, maxsplit=1)[0])

    def _text(self, name: str) -> str:
        return (self.read(f"{self.dir}/{name}", META_LIMIT) or b"").decode("utf-8", "replace")

    def requires(self) -> list[str]:
        """Names it requires outside any extra (a marker on the platform or Python counts: over
        counting only makes more files runner files, which counts against a planted one only
        when the verifier used it)."""
        if self.egg:
            lines = self._text("requires.txt").split("\n[", 1)[0].splitlines()
        else:
            lines = [ln.split(":", 1)[1] for ln in self._text("METADATA").splitlines()
                     if ln.startswith("Requires-Dist:") and "extra ==" not in ln and "extra==" not in ln]
        return [normalized(m.group(1)) for ln in lines if (m := _REQ.match(ln))]

    def plugins(self) -> list[str]:
        """Top-level modules its ``[pytest11]`` entry points name."""
        section = re.search(r"^\[pytest11\]\s*$(.*?)(?=^\[|\Z)", self._text("entry_points.txt"), re.M | re.S)
        values = [ln.split("=", 1)[1] for ln in (section.group(1) if section else "").splitlines() if "=" in ln]
        return [v.strip().split(":")[0].split(".")[0] for v in values if v.strip()]

    def tops(self) -> set[str]:
        """Its top-level modules: ``top_level.txt``, else the first part of each ``RECORD`` path,
        else its own name."""
        listed = {ln.strip() for ln in self._text("top_level.txt").splitlines() if ln.strip()}
        if not listed and not self.egg:
            for ln in self._text("RECORD").splitlines():
                first = ln.split(",", 1)[0].split("/", 1)[0]
                if first and not first.endswith((".dist-info", ".data")) and first != "..":
                    listed.add(re.sub(r"(\.cpython-[\w-]+|\.abi3)?\.(py|pyc|so|pth)$", "", first))
        return {n for n in listed if re.fullmatch(r"\w+", n)} or {self.name.replace("-", "_")}


def runner_modules(names: Names, read: Read) -> frozenset[str]:
    """Every top-level module the image's pytest loads (its requirements' closure and its plug-ins')
    and every module the image's interpreters import at start-up."""
    dists: dict[str, _Dist] = {}
    for site in site_dirs(names):
        for meta in sorted(names(site)):
            if meta.endswith((".dist-info", ".egg-info")):
                d = _Dist(site, meta, read)
                dists.setdefault(d.name, d)
    wanted = set(ROOTS) | {n for n, d in dists.items() if d.plugins()}
    todo, seen = list(wanted), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in dists:
            continue
        seen.add(name)
        todo += dists[name].requires()
    out = {t for n in seen for t in dists[n].tops()} | {p for n in seen for p in dists[n].plugins()}
    return frozenset(out | startup_modules(names, read))


def startup_modules(names: Names, read: Read) -> set[str]:
    """What ``site`` imports at every start: the customize modules, what the image's
    ``sitecustomize`` imports, and the modules named on the ``import`` lines of its ``.pth`` files."""
    out = set(STARTUP_MODULES)
    pythons = sorted(n for base in ("/usr/lib", "/usr/local/lib") for n in names(base) if re.fullmatch(r"python3\.\d+", n))
    for py in pythons:
        for path in (f"/usr/lib/{py}/sitecustomize.py", f"/usr/local/lib/{py}/sitecustomize.py",
                     f"/etc/{py}/sitecustomize.py"):
            out |= imported_by((read(path, META_LIMIT) or b"").decode("utf-8", "replace").splitlines())
    for site in site_dirs(names):
        for pth in (n for n in names(site) if n.endswith(".pth")):
            lines = (read(f"{site}/{pth}", META_LIMIT) or b"").decode("utf-8", "replace").splitlines()
            out |= imported_by(ln for ln in lines if ln.startswith(("import ", "import\t")))
    return out


#: a test.sh line that installs with pip: pip then decides which runner test.sh gets
_PIP_INSTALL = re.compile(r"(^|[\s;&|(])(pip3?(\.\d+)?|python3?(\.\d+)?\s+-m\s+pip)\s+install\b", re.M)


def installer_modules(test_sh: str) -> frozenset[str]:
    """The installer's own modules when test.sh installs with it (then they are the runner's);
    none when test.sh only asks pip something (``pip show``, ``pip list``): then pip is a
    command the tests run, the subject's business like any other."""
    return frozenset({"pip"}) if _PIP_INSTALL.search(test_sh) else frozenset()


#: the console script pip writes for an entry point (distlib's template, the import before or, in
#: newer pip, inside the ``if``), run by an image Python
_SHEBANG = re.compile(r"#!/usr(/local)?/bin/python3(\.\d+)?")
_FROM = re.compile(r"from ([A-Za-z_][\w.]*) import ([A-Za-z_]\w*)")
_WRAPPER = ["import re", "import sys", "if __name__ == '__main__':",
            r"sys.argv[0] = re.sub(r'(-script\.pyw|\.exe)?$', '', sys.argv[0])"]


def entry_script_module(data: bytes | None) -> str | None:
    """The top-level module a console script runs, when the file is exactly the wrapper pip
    writes for an entry point (``pip install --upgrade pip`` writes ``/usr/local/bin/pip``); None
    for any other file. Such a script is what the module it names is: a runner file only when
    that module is the runner's."""
    if data is None or len(data) > 4096:
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    if not lines or not _SHEBANG.fullmatch(lines[0]):
        return None
    body = [ln.strip() for ln in lines[1:] if ln.strip() and ln != "# -*- coding: utf-8 -*-"]
    imports = [(i, m) for i, ln in enumerate(body) if (m := _FROM.fullmatch(ln))]
    if len(imports) != 1 or len(body) != 6:
        return None
    i, m = imports[0]
    rest = body[:i] + body[i + 1:]
    if i not in (2, 3) or rest != _WRAPPER + [f"sys.exit({m.group(2)}())"]:
        return None
    return m.group(1).split(".")[0]


def asked_names(instruction: str, test_texts: Iterable[str]) -> frozenset[str]:
    """Distribution names the task asks for: words of its instruction that look like a package
    name with a separator (``pytest-timeout``, ``pytest_asyncio``), and the modules its tests
    import. A plug-in among them is the subject the task measures, not a planted runner file."""
    words = {normalized(w) for w in re.findall(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+", instruction)}
    imports = {normalized(n) for text in test_texts for n in imported_by(text.splitlines())}
    return frozenset(words | imports)


def imported_by(lines: Iterable[str]) -> set[str]:
    """Top-level names of the ``import x`` / ``from x import`` statements in ``lines`` (and of the
    further names of ``import a, b``)."""
    out = set()
    for ln in lines:
        m = _IMPORT.match(ln)
        if m is None:
            continue
        out.add(m.group(1))
        if ln.lstrip().startswith("import "):
            rest = ln.split("import", 1)[1].split(";")[0]
            out |= {p.strip().split(" ")[0].split(".")[0] for p in rest.split(",") if p.strip()}
    return {n for n in out if re.fullmatch(r"[A-Za-z_]\w*", n)}
