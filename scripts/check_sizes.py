"""No module over 400 lines, no function over 60 (the project guide): run by scripts/check.sh.

Counts every line of a ``.py`` file under flows/, harnesses/, tasks_lib/ and tbflow/, and a
function from its ``def`` line (decorators excluded) to its last line, docstring included.
Prints one line per offender, ``PATH:LINE: what``, and exits 1 when there is any.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flows", "harnesses", "tasks_lib", "tbflow")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def offenders(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(ROOT)
    found = []
    if (n := len(text.splitlines())) > MAX_MODULE_LINES:
        found.append(f"{rel}:1: module of {n} lines (max {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text, filename=str(rel))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                found.append(f"{rel}:{node.lineno}: function {node.name} of {n} lines (max {MAX_FUNCTION_LINES})")
    return found


def main() -> int:
    found = [o for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py")) for o in offenders(p)]
    print("\n".join(found)) if found else None
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
