"""The verifier wrapper's report, read from the exec's own stdout on the host.

This is the channel that decides a trial's reward: the wrapper reports the bytes of
``reward.txt`` / ``reward.json`` the moment ``test.sh`` exits, on the ``docker exec`` stream that
tbflow reads (``exec_capture``). Unlike any file in the container, a process the agent left
running cannot rewrite it afterwards. The line format is documented next to ``VERIFIER_WRAPPER``
in ``container_scripts``.

A process in the container that writes into the wrapper's stdout (root can open
``/proc/<pid>/fd/1``) shows up as lines the wrapper did not write (``stray``) or as a second copy
of a line that must appear once (``conflicts``); the caller decides what that means for the
verdict (README "Validity against adversarial agents").
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tasks_lib.container.container_scripts import REWARD_REPORT_CAP

HEADER = "tbflow-witness 1"
REWARD_FILES = ("reward.txt", "reward.json")


class ReportedFile(BaseModel):
    """A reward file as the wrapper saw it: its size and (up to the cap) its bytes."""

    size: int
    data: bytes

    @property
    def complete(self) -> bool:
        return len(self.data) == self.size


class Witness(BaseModel):
    """What the verifier wrapper reported, line by line."""

    started: bool = False
    done: bool = False
    exit_code: int | None = None
    #: reward files at test.sh's exit; a name missing here was reported absent (or never reported)
    files: dict[str, ReportedFile] = Field(default_factory=dict)
    absent: list[str] = Field(default_factory=list)
    #: reward files that were already there before the verifier started (written by the agent)
    prewritten: dict[str, ReportedFile] = Field(default_factory=dict)
    stdout_size: int | None = None
    ran_next_to: list[str] = Field(default_factory=list)
    #: what the wrapper found broken (``/logs`` removed, workdir removed) and repaired
    notes: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    failure: str | None = None
    df: list[str] = Field(default_factory=list)
    #: lines the wrapper never writes
    stray: list[str] = Field(default_factory=list)
    #: lines the wrapper writes once that came more than once
    conflicts: list[str] = Field(default_factory=list)

    @property
    def forged(self) -> bool:
        """Whether something else wrote into the channel (the reward can no longer be told)."""
        return bool(self.stray or self.conflicts)


def _hex_bytes(lines: list[str]) -> bytes | None:
    try:
        return bytes(int(tok, 16) for ln in lines for tok in ln.split())
    except ValueError:
        return None


def parse_witness(raw: bytes) -> Witness:
    w = Witness()
    lines = raw.decode("utf-8", errors="replace").splitlines()
    seen: set[str] = set()
    i = 0

    def once(key: str, line: str) -> bool:
        if key in seen:
            w.conflicts.append(line)
            return False
        seen.add(key)
        return True

    while i < len(lines):
        line = lines[i]
        i += 1
        head, _, rest = line.partition(" ")
        if line == HEADER:
            if once("header", line):
                w.started = True
        elif head == "p":
            w.ran_next_to.append(rest)
        elif head == "note":
            w.notes.append(rest)
        elif head in ("pre", "file"):
            parts = rest.split(" ")
            body: list[str] = []
            while i < len(lines) and lines[i] != "end":
                body.append(lines[i])
                i += 1
            i += 1  # the "end" line
            data = _hex_bytes(body)
            if len(parts) != 2 or parts[0] not in REWARD_FILES or not parts[1].isdigit() or data is None \
                    or len(data) != min(int(parts[1]), REWARD_REPORT_CAP):
                w.stray.append(line)
                continue
            if once(f"{head} {parts[0]}", line):
                target = w.files if head == "file" else w.prewritten
                target[parts[0]] = ReportedFile(size=int(parts[1]), data=data)
        elif head == "absent" and rest in REWARD_FILES:
            if once(f"file {rest}", line):
                w.absent.append(rest)
        elif head == "missing":
            w.missing.append(rest)
        elif head == "size" and rest.startswith("test-stdout.txt "):
            size = rest.split(" ", 1)[1]
            if once("size", line) and size.isdigit():
                w.stdout_size = int(size)
        elif head == "df":
            w.df.append(rest)
        elif head == "fail":
            if once("fail", line):
                w.failure = rest
        elif head == "exit" and rest.lstrip("-").isdigit():
            if once("exit", line):
                w.exit_code = int(rest)
        elif line == "done":
            if once("done", line):
                w.done = True
        elif line.strip():
            w.stray.append(line)
    return w
