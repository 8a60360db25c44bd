"""``tbflow report --fail-on-flagged``: CI can refuse a job in which an agent reached for the judge."""

from __future__ import annotations

import pytest

from tasks_lib.errors import InputError
from tasks_lib.report.flag_gate import ALL_KINDS, DEFAULT_KINDS, check_flags, parse_kinds


class _Rec:
    def __init__(self, trial_id, *kinds):
        from tasks_lib.job.records import TrialFlag

        self.trial_id = trial_id
        self.flags = [TrialFlag(kind=k, message=k) for k in kinds]


def test_bare_flag_fails_on_tampering_breakage_and_toolchain_but_not_on_services():
    assert parse_kinds("any") == DEFAULT_KINDS and "agent-processes" not in DEFAULT_KINDS
    records = [_Rec("a.oracle.1", "agent-processes"), _Rec("b.oracle.1", "tampering", "broke-container")]
    gate = check_flags(DEFAULT_KINDS, records)
    assert gate.tripped and gate.message == "1 flagged trial (broke-container: 1, tampering: 1): b.oracle.1"
    assert not check_flags(DEFAULT_KINDS, [_Rec("a.oracle.1", "agent-processes")]).tripped
    assert check_flags(parse_kinds("all"), records).tripped and parse_kinds("all") == ALL_KINDS


def test_unknown_kind_names_the_flag():
    with pytest.raises(InputError, match="--fail-on-flagged.*not a flag kind"):
        parse_kinds("tampering,forgery")
