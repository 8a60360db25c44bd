"""Dependencies point one way (``flows`` -> ``harnesses`` -> ``tasks_lib``) and no module imports
itself back through others, not even lazily inside a function or under ``TYPE_CHECKING``
(docs/architecture.md). Lazy imports that dodge a cycle hide it; this test sees them too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flows", "harnesses", "tasks_lib")
RANK = {"tasks_lib": 0, "harnesses": 1, "flows": 2}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every project module ``name`` imports, resolved to the deepest known module."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {name: _imports(name, path, known) for name, path in mods.items()}


def test_packages_import_only_downwards():
    wrong = [f"{a} imports {b}" for a, deps in _graph().items() for b in deps
             if RANK[b.split(".")[0]] > RANK[a.split(".")[0]]]
    assert not wrong, "imports against flows -> harnesses -> tasks_lib:\n" + "\n".join(sorted(wrong))


def test_no_module_cycles():
    graph = _graph()
    # a package's __init__ importing its own children is not a cycle of behaviour; drop those edges
    for name, deps in graph.items():
        graph[name] = {d for d in deps if not d.startswith(name + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_checker_sees_a_lazy_cycle(tmp_path, monkeypatch):
    """The cycle check itself can fail: a lazy import inside a function is an edge."""
    pkg = tmp_path / "tasks_lib"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from tasks_lib.b import x\n")
    (pkg / "b.py").write_text("def x():\n    from tasks_lib.a import y\n")
    for other in ("flows", "harnesses"):
        (tmp_path / other).mkdir()
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    graph = _graph()
    assert graph["tasks_lib.a"] == {"tasks_lib.b"} and graph["tasks_lib.b"] == {"tasks_lib.a"}
