"""A file name or command line from the container may hold any bytes (Python keeps them as lone
surrogates); a record holding one must still be written, escaped, never a serialisation error
that loses the trial (a FIFO named with 0xff in /logs/agent once left no record at all)."""

from __future__ import annotations

import json
import os

from tasks_lib.container.container_outcomes import ProcessInfo, SkippedLogEntry

from tasks_lib.records.record_models import TrialFlag


def test_surrogate_escaped_names_serialise_as_backslash_escapes():
    name = os.fsdecode(b"agent/bad\xffname")
    entry = SkippedLogEntry(path=name, reason=f"fifo {name}")
    assert json.loads(entry.model_dump_json())["path"] == "agent/bad\\xffname"
    proc = ProcessInfo(pid=1, sid=1, command=os.fsdecode(b"sleep \xfe\r"))
    assert json.loads(proc.model_dump_json())["command"] == "sleep \\xfe\r"
    flag = TrialFlag(kind="tampering", message=os.fsdecode(b"x\xff"))
    assert flag.message == "x\\xff"
