"""Rewrite import paths and file references from tbflow's old flat layout to the sub-package one.

The layout change (docs/architecture.md) moved every module into a sub-package per concern without
renaming it. This script rewrites what still names the old places, so a branch written against the
flat layout can be merged: dotted module paths (imports, ``monkeypatch`` targets), ``from PKG
import module`` lines, relative imports, and ``pkg/module.py`` paths in docs and scripts. It is
idempotent: a path already in the new layout never matches an old one.

Usage: python scripts/relayout.py [PATH ...]   (default: the repository; files or folders)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: old dotted module -> new dotted module
MOVES: dict[str, str] = {}


def _group(old_pkg: str, new_pkg: str, names: str) -> None:
    for name in names.split():
        MOVES[f"{old_pkg}.{name}"] = f"{new_pkg}.{name}"


_group("tasks_lib", "tasks_lib.container", "docker_client sandbox archives inline_files container_scripts")
_group("tasks_lib", "tasks_lib.trial", "images agent_stage process_groups verifier_stage rewards classify interrupts")
_group("tasks_lib", "tasks_lib.gateway",
       "gateway_config gateway_http gateway_usage model_gateway model_link relay_build")
_group("tasks_lib", "tasks_lib.job", "task_loader task_model job_store job_identity records")
_group("tasks_lib", "tasks_lib.report",
       "results_model results_build render_markdown render_junit render_diff md_format stats invalid_gate "
       "report_files report_inputs templating text_clean job_diff")
_group("harnesses", "harnesses.cli", "cli_harness codex opencode pi claude_code usage_parsers")
_group("harnesses", "harnesses.bundles", "bundle_cache npm_bundle node_runtime")
_group("flows", "flows.cli", "cli_options console progress report_cli")
MOVES["harnesses.base"] = "tasks_lib.trial.harness_api"
#: ``flows.cli`` itself became a package; its module is ``flows.cli.main``
FLOWS_CLI_CHILDREN = ("main", "cli_options", "console", "progress", "report_cli")

#: names that moved to another module: (old module, name) -> new module
NAME_MOVES = {
    ("tasks_lib.report.results_model", "build_results"): "tasks_lib.report.results_build",
    ("tasks_lib.report.results_model", "load_results"): "tasks_lib.report.results_build",
}

PATH_MOVES = {old.replace(".", "/") + ".py": new.replace(".", "/") + ".py" for old, new in MOVES.items()}
PATH_MOVES["flows/cli.py"] = "flows/cli/main.py"
DIR_MOVES = {"tasks_lib/relay/": "tasks_lib/gateway/relay/", "flows/templates": "tasks_lib/report/templates"}

TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".sh", ".txt", ".cfg", ".ini", ""}
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", "jobs", ".pytest_cache"}

_DOTTED = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(MOVES, key=len, reverse=True)) + r")\b(?![\w])")
_FLOWS_CLI = re.compile(r"\bflows\.cli\b(?!\.(?:" + "|".join(FLOWS_CLI_CHILDREN) + r")\b)(?![\w])"
                        r"(?! import (?:" + "|".join(FLOWS_CLI_CHILDREN) + r")\b)")
_FROM_PKG = re.compile(r"^(?P<indent>[ \t]*)from (?P<pkg>tasks_lib|harnesses|flows) import "
                       r"(?P<names>[^()\n#]+?)[ \t]*(?P<comment>#.*)?$", re.M)
_RELATIVE = re.compile(r"^(?P<indent>[ \t]*)from \.(?P<mod>\w+) import ", re.M)
_RELATIVE_BARE = re.compile(r"^(?P<indent>[ \t]*)from \. import (?P<mod>\w+)(?P<alias>\s+as\s+\w+)?[ \t]*$", re.M)


def _split_from_pkg(match: re.Match[str]) -> str:
    """``from tasks_lib import interrupts, errors`` -> one line per new home."""
    indent, pkg = match["indent"], match["pkg"]
    lines: dict[str, list[str]] = {}
    for part in match["names"].split(","):
        part = part.strip()
        if not part:
            continue
        name = part.split(" as ")[0].strip()
        target = pkg
        if f"{pkg}.{name}" in MOVES:
            target = MOVES[f"{pkg}.{name}"].rsplit(".", 1)[0]
        elif pkg == "flows" and name == "cli":
            target = "flows.cli"
            part = part.replace("cli", "main", 1) if " as " in part else "main as cli"
        elif pkg == "flows" and name == "__version__":
            target = "tasks_lib"
        lines.setdefault(target, []).append(part)
    comment = f"  {match['comment']}" if match["comment"] else ""
    return "\n".join(f"{indent}from {t} import {', '.join(ns)}{comment}" for t, ns in lines.items())


_FROM_MOD = re.compile(r"^(?P<indent>[ \t]*)from (?P<mod>[\w.]+) import (?P<names>[^()\n#]+?)[ \t]*$", re.M)


def _move_names(match: re.Match[str]) -> str:
    """``from results_model import Results, load_results`` -> load_results from its new module."""
    mod = match["mod"]
    if not any(m == mod for m, _ in NAME_MOVES):
        return match.group(0)
    lines: dict[str, list[str]] = {}
    for part in (p.strip() for p in match["names"].split(",")):
        if part:
            lines.setdefault(NAME_MOVES.get((mod, part.split(" as ")[0].strip()), mod), []).append(part)
    return "\n".join(f"{match['indent']}from {m} import {', '.join(ns)}" for m, ns in lines.items())


def _package_of(path: Path) -> str | None:
    try:
        rel = path.resolve().relative_to(ROOT)
    except ValueError:
        rel = path
    parts = rel.parts
    if not parts or parts[0] not in ("tasks_lib", "harnesses", "flows"):
        return None
    return ".".join(parts[:-1])


def _absolute_relatives(text: str, path: Path) -> str:
    """``from .records import X`` -> absolute, resolving a name the file's own package lacks
    against the top-level package (a file moved by a merge keeps its old relative imports)."""
    package = _package_of(path)
    if package is None:
        return text

    def resolve(mod: str) -> str:
        folder = ROOT / package.replace(".", "/")
        full = f"{package}.{mod}" if (folder / f"{mod}.py").exists() or (folder / mod).is_dir() \
            else f"{package.split('.')[0]}.{mod}"
        return MOVES.get(full, full)

    def fix(match: re.Match[str]) -> str:
        return f"{match['indent']}from {resolve(match['mod'])} import "

    def fix_bare(match: re.Match[str]) -> str:
        parent, _, name = resolve(match["mod"]).rpartition(".")
        return f"{match['indent']}from {parent} import {name}{match['alias'] or ''}"

    return _RELATIVE_BARE.sub(fix_bare, _RELATIVE.sub(fix, text))


def rewrite(text: str, path: Path) -> str:
    if path.suffix == ".py":
        text = _absolute_relatives(text, path)
        text = _FROM_PKG.sub(_split_from_pkg, text)
        text = re.sub(r"\bflows\.__version__\b", "tasks_lib.__version__", text)
    text = _DOTTED.sub(lambda m: MOVES[m.group(1)], text)
    if path.suffix == ".py":
        text = _FROM_MOD.sub(_move_names, text)
    text = _FLOWS_CLI.sub("flows.cli.main", text)
    for old, new in PATH_MOVES.items():
        text = re.sub(r"(?<![\w/])" + re.escape(old) + r"\b", new, text)
    for old, new in DIR_MOVES.items():
        text = re.sub(r"(?<![\w/])" + re.escape(old), new, text)
    return text


def iter_files(paths: list[Path]):
    for p in paths:
        if p.is_file():
            yield p
            continue
        for f in p.rglob("*"):
            if f.is_file() and not (SKIP_DIRS & set(f.relative_to(p).parts)) and f.suffix in TEXT_SUFFIXES:
                yield f


def main(argv: list[str]) -> int:
    targets = [Path(a) for a in argv] or [ROOT]
    changed = 0
    for f in iter_files(targets):
        if f.resolve() == Path(__file__).resolve():
            continue
        try:
            old = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = rewrite(old, f)
        if new != old:
            f.write_text(new, encoding="utf-8")
            changed += 1
            print(f"rewrote {f}")
    print(f"{changed} file(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
