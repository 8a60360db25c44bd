"""Tampering: what changed the verifier's files outside ``test.sh``, kept as evidence.

The reward comes from the judge's own report (``judge_report``), so tampering cannot change it;
it is flagged instead, with the evidence in ``verifier/tampering.txt``:

* a ``reward.*`` entry (of any type) that was already there before the verifier started (the
  agent made it; the judge removed it before ``test.sh``),
* anything else left in ``/logs/verifier`` before the verifier started (a deep tree, thousands of
  files: the judge's note counts them and names the first; the directory is set aside whole),
* what the judge found broken and repaired as root (``/logs``, ``/logs/verifier``, the task's
  workdir, ``/tmp``, ``/dev/null`` and the other standard devices),
* a reward file or ``test-stdout.txt`` that differs, at download time, from what the judge saw
  when ``test.sh`` exited, or a verifier directory that disappeared in between (the changed copy is
  kept under ``verifier/changed-after-test-sh/``).

After the check, ``verifier/reward.*`` in the trial dir hold the bytes ``test.sh`` wrote.
"""

from __future__ import annotations

import os
from pathlib import Path

from tasks_lib.records.record_models import TrialFlag
from tasks_lib.text_clean import escaped_name
from tasks_lib.judge.judge_report import REWARD_FILES, JudgeReport

EVIDENCE = "verifier/tampering.txt"
CHANGED_DIR = "changed-after-test-sh"
SHOW_BYTES = 200


def _show(data: bytes | None) -> str:
    if data is None:
        return "no file"
    more = f" … ({len(data)} bytes)" if len(data) > SHOW_BYTES else ""
    return repr(data[:SHOW_BYTES]) + more


def check_tampering(w: JudgeReport, trial_dir: Path, verifier_downloaded: bool, complete: bool) -> list[TrialFlag]:
    """Compare the downloaded verifier dir with the judge's report; restore test.sh's reward files."""
    vdir = trial_dir / "verifier"
    found: list[tuple[str, list[str]]] = []  # (message, evidence lines)
    for name, f in sorted(w.prewritten.items()):
        size = "" if f.complete else f" ({f.size} bytes in all; the judge reports only the first {len(f.data)})"
        found.append((f"{name} was written before the verifier started (removed before test.sh ran)",
                      [f"{name} found before test.sh: {_show(f.data)}{size}"]))
    if w.omitted.get("pre"):
        found.append((f"{w.omitted['pre']} more reward.* entries were there before the verifier started "
                      "(removed before test.sh ran)", ["counted by the judge, not listed (judge/judge.h ENTRY_LIST_CAP)"]))
    for name, kind in sorted(w.pre_types.items()):
        found.append((f"a {kind} named {name} was there before the verifier started (removed before test.sh ran)",
                      [f"{name}: {kind}"]))
    for note in w.notes:
        found.append((note, [note]))
    if complete and not verifier_downloaded:
        found.append(("/logs/verifier was removed after test.sh exited",
                      ["the download of /logs after test.sh held no verifier directory"]))
    elif complete:
        found += _changed_after_exit(w, vdir)
    if not found:
        return []
    # reward.* names and the judge's notes (a workdir's path) are the agent's bytes: stored escaped
    found = [(escaped_name(m), [escaped_name(ln) for ln in lines]) for m, lines in found]
    vdir.mkdir(parents=True, exist_ok=True)
    text = ["What changed the verifier's files outside test.sh (the reward is test.sh's own; see docs/judge.md).",
            ""]
    for message, lines in found:
        text += [f"- {message}", *(f"    {ln}" for ln in lines)]
    (trial_dir / EVIDENCE).write_text("\n".join(text) + "\n", encoding="utf-8")
    return [TrialFlag(kind="tampering", message=m, evidence=EVIDENCE) for m, _ in found]


def _changed_after_exit(w: JudgeReport, vdir: Path) -> list[tuple[str, list[str]]]:
    found = []
    for name in REWARD_FILES:
        at_exit = w.files.get(name)
        path = vdir / name
        if path.is_dir() and not path.is_symlink():  # the download turned a replaced file into a dir
            (vdir / CHANGED_DIR).mkdir(exist_ok=True)
            os.replace(path, vdir / CHANGED_DIR / name)
        now = path.read_bytes() if path.is_file() else None
        expected = at_exit.data if at_exit else None
        same = (now is None and at_exit is None) or (
            now is not None and at_exit is not None and len(now) == at_exit.size and now[:len(at_exit.data)] == expected)
        if not same:
            found.append((f"{name} changed after test.sh exited",
                          [f"at test.sh's exit (tbflow's judge): {_show(expected)}",
                           f"downloaded afterwards: {_show(now)}"]))
            if now is not None:
                (vdir / CHANGED_DIR).mkdir(exist_ok=True)
                os.replace(path, vdir / CHANGED_DIR / name)
        if at_exit is not None and at_exit.complete:
            path.write_bytes(at_exit.data)
    out = vdir / "test-stdout.txt"
    size = out.stat().st_size if out.is_file() else None
    if w.stdout_size is not None and size != w.stdout_size:
        found.append(("test-stdout.txt changed after test.sh exited",
                      [f"{w.stdout_size} bytes at test.sh's exit, "
                       f"{size if size is not None else 'no file'} when downloaded"]))
    return found
