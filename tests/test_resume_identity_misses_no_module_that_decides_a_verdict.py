"""Resume identity used to miss verdict code: a hand-kept list left out 39 modules the trial flow
imports (the retry and disk-full rules in errors.py, the gateway's "reached the model" witness,
relay.c, the task loader, the plug-in guard), so changing one resumed silently and mixed two rules
in one score. The set is derived from the code now; these tests fail when something that decides
a verdict is left out."""

import ast
import shutil
from pathlib import Path

from tasks_lib.records.import_closure import imported_names, verdict_sources
from tasks_lib.records.job_identity import identity_changes, judge_identity

ROOT = Path(__file__).resolve().parents[1]
OWN = ("tasks_lib", "flows", "harnesses")

#: decide verdicts, and were left out of the hand-kept list
MUST_BE_IN = ("tasks_lib/errors.py", "tasks_lib/judge/verdict_table.py", "tasks_lib/gateway/gateway_usage.py",
              "tasks_lib/gateway/gateway_http.py", "tasks_lib/gateway/relay/relay.c", "tasks_lib/task/task_model.py",
              "tasks_lib/task/task_loader.py", "harnesses/plugin_guard.py", "tasks_lib/judge/rewards.py",
              "tasks_lib/trial/trial_verdict.py", "flows/trial_flow.py")


def test_the_named_verdict_modules_and_every_c_source_of_the_judge_are_in():
    files = judge_identity().files
    missing = [f for f in MUST_BE_IN if f not in files]
    assert missing == [], f"left out of the resume identity: {missing}"
    judge_c = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tasks_lib/container/judge").iterdir()
                     if p.suffix in (".c", ".h"))
    assert judge_c and set(judge_c) <= set(files), set(judge_c) - set(files)
    assert verdict_sources(ROOT) == sorted(verdict_sources(ROOT)), "the order is deterministic"


def _ast_closure(entry: str) -> set[str]:
    """The same closure read by Python's own parser: the reference the cheap text scan must cover."""
    seen: set[str] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            mod = ".".join(parts[:i])
            base = ROOT.joinpath(*mod.split("."))
            path = next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)
            if mod in seen or parts[0] not in OWN or path is None:
                continue
            seen.add(mod)
            pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    todo += [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base_name = node.module or ""
                    if node.level:
                        anchor = ".".join(pkg.split(".")[:len(pkg.split(".")) - node.level + 1])
                        base_name = f"{anchor}.{base_name}" if base_name else anchor
                    todo += [base_name] + [f"{base_name}.{a.name}" for a in node.names]
    out = set()
    for mod in seen:
        base = ROOT.joinpath(*mod.split("."))
        out.add((base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py")
                .relative_to(ROOT).as_posix())
    return out


def test_every_module_the_trial_flow_imports_is_in_as_pythons_parser_reads_the_imports():
    missing = _ast_closure("flows.trial_flow") - set(verdict_sources(ROOT))
    assert missing == set(), f"imported by the trial flow but left out of the identity: {sorted(missing)}"


def test_import_forms_are_read_lazy_relative_and_parenthesised():
    src = ("import a.b, c as d\n"
           "def f():\n    from .sib import (x,\n        y as z)\n"
           "    from .. import up\n")
    names = imported_names(src, "pkg.sub.mod", is_package=False)
    assert {"a.b", "c", "pkg.sub.sib", "pkg.sub.sib.x", "pkg.sub.sib.y", "pkg", "pkg.up"} <= set(names), names


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "tbflow"
    for pkg in OWN:
        shutil.copytree(ROOT / pkg, copy / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_editing_a_copy_of_a_verdict_file_changes_the_identity_and_says_which(tmp_path):
    copy = _copy(tmp_path)
    before = judge_identity(root=copy)
    assert before.files == judge_identity().files, "keys and hashes do not depend on where the code sits"
    for rel in ("tasks_lib/errors.py", "tasks_lib/gateway/relay/relay.c"):
        with open(copy / rel, "a") as fh:
            fh.write("\n/* a changed rule */\n" if rel.endswith(".c") else "\n# a changed rule\n")
    after = judge_identity(root=copy)
    assert after.files != before.files
    assert [f for f in before.files if before.files[f] != after.files[f]] == sorted(
        ["tasks_lib/errors.py", "tasks_lib/gateway/relay/relay.c"])


def test_a_new_module_the_trial_flow_starts_importing_is_a_change(tmp_path):
    copy = _copy(tmp_path)
    old = judge_identity(root=copy)
    (copy / "tasks_lib" / "trial" / "new_rule.py").write_text("THRESHOLD = 0.5\n")
    assert judge_identity(root=copy).files == old.files, "a module nothing imports decides nothing"
    flow = copy / "flows" / "trial_flow.py"
    flow.write_text(flow.read_text() + "\n\ndef _late():\n    from tasks_lib.trial import new_rule  # noqa\n")
    new = judge_identity(root=copy)
    assert "tasks_lib/trial/new_rule.py" in new.files

    from tasks_lib.records.job_identity import JobIdentity
    changes = identity_changes(JobIdentity(config={}, tasks={}, harnesses={}, judge=old),
                               JobIdentity(config={}, tasks={}, harnesses={}, judge=new))
    assert any("has new files: tasks_lib/trial/new_rule.py" in c for c in changes), changes
