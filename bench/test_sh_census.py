"""Census of test.sh patterns: which share of a dataset's tasks tbflow can supply the runner for.

    .venv/bin/python bench/test_sh_census.py DATASET_DIR... [--by-task]

Each DATASET_DIR is a task directory (it has ``tests/test.sh``), a directory of tasks, or a TB 2.1
checkout (tasks under ``tasks/``). Every test.sh goes through ``read_runner_pins``; the class is the
recogniser's verdict refined by how the file differs from the standard TB 2.x test.sh (608 bytes,
sha256 ``4770437e…``). Prints, per DATASET_DIR, a Markdown share table, then the uv/Python versions,
uvx flags, pytest arguments and ``-w`` pins seen. Why a script and not a test: the numbers belong
in bench/RESULTS.md with the dataset commit they were read at, and datasets are not in the repo.
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks_lib.task.runner_pins import MAX_BYTES, NotPinned, RunnerPins, read_runner_pins  # noqa: E402

STANDARD_SHA256 = "4770437ea96c3cc84684b4f99d55fb148fcac09f9ea1e8ef49de487716e6c334"
STANDARD_WHEELS = {"pytest==8.4.1", "pytest-json-ctrf==0.3.5"}
STANDARD_ARGS = ("--ctrf", "/logs/verifier/ctrf.json", "/tests/test_outputs.py", "-rA")
# NotPinned reasons, by a phrase of the reason, in the order they are tried
REFUSED_CLASSES = (
    ("runs the image's own Python", "not pinned: pip/pytest of the image's own Python"),
    ("uv venv/pip/run", "not pinned: uv venv inside the container"),
    ("installs no pinned uv", "not pinned: uvx of the image's uv"),
)


def task_dirs(path: Path) -> list[Path]:
    """The task directories under ``path``: itself, its children, or ``tasks/*`` (TB 2.1)."""
    if (path / "tests" / "test.sh").is_file():
        return [path]
    base = path / "tasks" if (path / "tasks").is_dir() else path
    return sorted(d for d in base.iterdir() if (d / "tests" / "test.sh").is_file())


def classify(text: str) -> tuple[str, str]:
    """(class, detail) of one test.sh."""
    if hashlib.sha256(text.encode()).hexdigest() == STANDARD_SHA256:
        return "pinned: byte-identical to the standard file", ""
    verdict = read_runner_pins(text)
    if isinstance(verdict, NotPinned):
        label = next((c for phrase, c in REFUSED_CLASSES if phrase in verdict.reason), None)
        return label or "not pinned: extra setup lines", str(verdict)
    return _pinned_class(verdict)


def _pinned_class(pins: RunnerPins) -> tuple[str, str]:
    extra_wheels = [w.spec for w in pins.wheels if w.spec not in STANDARD_WHEELS]
    extra_apt = [p for p in pins.apt_packages if p != "curl"]
    changes = [
        f"setup {' '.join(' '.join(c) for c in pins.setup_commands)}" if pins.setup_commands else "",
        f"cd {pins.cwd}" if pins.cwd else "",
        f"apt +{','.join(extra_apt)}" if extra_apt else "",
        "no apt curl" if "curl" not in pins.apt_packages else "",
        f"-w {' '.join(extra_wheels)}" if extra_wheels else "",
        f"python {pins.python}" if pins.python != "3.13" else "",
        f"pytest args {' '.join(pins.pytest_args)}" if pins.pytest_args != STANDARD_ARGS else "",
    ]
    detail = "; ".join(c for c in changes if c)
    if pins.setup_commands or pins.cwd:
        return "pinned: extra setup lines (cp/cd)", detail
    if extra_apt or "curl" not in pins.apt_packages:
        return "pinned: other apt packages", detail
    if extra_wheels:
        return "pinned: standard + extra -w wheels", detail
    if pins.pytest_args != STANDARD_ARGS or pins.python != "3.13":
        return "pinned: other pytest arguments", detail
    return "pinned: standard, only comments/blank lines differ", detail


def census(dataset: Path, by_task: bool) -> list[str]:
    rows: list[tuple[str, str, str]] = []
    pins_seen: Counter[str] = Counter()
    for task in task_dirs(dataset):
        with open(task / "tests" / "test.sh", "rb") as f:  # bounded: the recogniser refuses more anyway
            text = f.read(MAX_BYTES + 1).decode("utf-8", "replace")
        label, detail = classify(text)
        rows.append((task.name, label, detail))
        _count_pins(read_runner_pins(text), pins_seen)
    return _table(dataset, rows, by_task) + _pins_lines(pins_seen)


def _count_pins(verdict: RunnerPins | NotPinned, seen: Counter[str]) -> None:
    if isinstance(verdict, RunnerPins):
        seen.update([f"uv {verdict.uv}", f"uvx -p {verdict.python}", f"pytest args: {' '.join(verdict.pytest_args)}"])
        seen.update(f"-w {w.spec}" for w in verdict.wheels)
        seen.update(f"apt {p}" for p in verdict.apt_packages)


def _table(dataset: Path, rows: list[tuple[str, str, str]], by_task: bool) -> list[str]:
    total = len(rows)
    by_class = Counter(label for _, label, _ in rows)
    out = [f"### {dataset} ({total} tasks)", "", "| class | tasks | share | which |", "|---|---:|---:|---|"]
    for label, n in sorted(by_class.items(), key=lambda kv: (not kv[0].startswith("pinned"), -kv[1], kv[0])):
        names = [name for name, lab, _ in rows if lab == label]
        shown = ", ".join(names) if n <= 12 else f"{', '.join(names[:6])}, … ({n - 6} more)"
        out.append(f"| {label} | {n} | {100 * n / max(total, 1):.1f}% | {shown} |")
    pinned = sum(n for label, n in by_class.items() if label.startswith("pinned"))
    out += ["", f"Runner pinned by test.sh: {pinned} of {total} ({100 * pinned / max(total, 1):.1f}%).", ""]
    if by_task:
        out += ["| task | class | detail |", "|---|---|---|"]
        out += [f"| {name} | {label} | {detail.replace('|', '/')} |" for name, label, detail in rows]
        out.append("")
    return out


def _pins_lines(seen: Counter[str]) -> list[str]:
    lines = ["Pins seen in the pinned files (count of tasks):", ""]
    lines += [f"- `{item}` ×{n}" for item, n in sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))]
    return lines + [""]


def main(argv: list[str]) -> int:
    by_task = "--by-task" in argv
    paths = [Path(a) for a in argv if a != "--by-task"]
    if not paths or not all(p.is_dir() for p in paths):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    for path in paths:
        print("\n".join(census(path, by_task)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
