"""The judge's channel is framed by length, parsed strictly, and only a whole report counts.

What the last round's wrapper got wrong: the host split the report with ``splitlines()`` (which
also splits on ``\\r``, U+2028 and friends) while the wrapper framed by ``\\n``, so a command line
holding ``\\r`` injected a reward block; and a report counted once ``done`` arrived, whatever the
exec's exit code. Here a record carries any bytes, a cut-off or unknown record ends the parse as
a problem, and ``ToolRun.complete`` needs hello … end *and* exit code 0 as Docker reports it.
"""

from __future__ import annotations

from tasks_lib.container.judge.judge_channel import parse_channel
from tasks_lib.container.judge.judge_exec import ToolRun
from tasks_lib.judge.judge_report import parse_report


def _rec(tag: str, data: bytes) -> bytes:
    return f"{tag} {len(data)}\n".encode() + data + b"\n"


def test_carriage_return_and_newlines_inside_a_record_start_no_record():
    evil = b"1 1 0 S sleep \r\nfile 13\n1 10 reward.txt1\nend 0\n\n" + "\u2028".encode()
    raw = _rec("hello", b"tbflow-judge 1") + _rec("proc", evil) + _rec("exit", b"0") + _rec("end", b"")
    ch = parse_channel(raw)
    assert ch.problem is None and [t for t, _ in ch.records] == ["hello", "proc", "exit", "end"]
    report = parse_report(ch)
    assert report.files == {} and "reward.txt1" in report.ran_next_to[0].command


def test_cut_off_or_unknown_record_is_a_problem_not_a_partial_truth():
    whole = _rec("hello", b"x") + _rec("file", b"1 10 reward.txt1") + _rec("end", b"")
    assert parse_channel(whole).ended
    assert not parse_channel(whole[:-3]).ended and "cut off" in parse_channel(whole[:-3]).problem
    bad = parse_channel(_rec("hello", b"x") + b"forged 1\n1\n" + _rec("end", b""))
    assert not bad.ended and "malformed" in bad.problem
    assert parse_channel(b"").problem == "the judge wrote nothing"


def test_a_whole_report_counts_only_with_exit_code_zero_from_docker():
    ch = parse_channel(_rec("hello", b"x") + _rec("file", b"1 10 reward.txt1") + _rec("end", b""))
    common = dict(channel=ch, timed_out=False, overflow=False, duration_sec=1.0, stderr=b"")
    assert ToolRun(exit_code=0, **common).complete
    assert not ToolRun(exit_code=137, **common).complete  # killed after writing a whole report
    assert not ToolRun(exit_code=None, **common).complete  # no exit code seen
    assert not ToolRun(exit_code=0, **{**common, "overflow": True}).complete


def test_reward_file_names_with_spaces_and_any_bytes_are_read_by_length():
    data = b"3 12 reward.txt x\x00\xff\n"  # a name with a space, then 3 bytes (a NUL, 0xff, \n)
    ch = parse_channel(_rec("hello", b"x") + _rec("file", b"2 10 reward.txt1\n") + _rec("pre", data) + _rec("end", b""))
    r = parse_report(ch)
    assert r.files["reward.txt"].data == b"1\n" and r.files["reward.txt"].complete
    assert r.prewritten["reward.txt x"].data == b"\x00\xff\n"


def test_watch_counts_name_rewrites_that_one_write_does_not_explain():
    ch = parse_channel(_rec("hello", b"x") + _rec("watch", b"writes_txt=1 writes_json=0 moved_in=0 created=1 deleted=0 "
                                                             b"moved_out=0 dir_replaced=0 overflow=0") + _rec("end", b""))
    assert parse_report(ch).reward_rewrites is None
    ch = parse_channel(_rec("hello", b"x") + _rec("watch", b"writes_txt=40 moved_in=12 dir_replaced=1") + _rec("end", b""))
    seen = parse_report(ch).reward_rewrites
    assert "renamed in or out 12 time(s)" in seen and "written 40 times" in seen and "moved or removed" in seen


def test_end_is_found_record_by_record_never_inside_a_record():
    """The reader lets the judge go once ``end`` arrived (judge/judge.h); a command line that holds
    the bytes of an end record must not let it go early, and neither may a cut-off record."""
    from tasks_lib.container.judge.judge_channel import next_record

    evil = _rec("proc", b"1 1 0 S sleep x\nend 0\n\n")
    raw = _rec("hello", b"tbflow-judge 1") + evil + _rec("end", b"")

    def tags(buf: bytes) -> list[str]:
        pos, seen = 0, []
        while (found := next_record(buf, pos)) is not None:
            tag, pos = found
            seen.append(tag)
            if tag in ("end", ""):
                break
        return seen

    assert tags(raw) == ["hello", "proc", "end"]
    assert tags(raw[:-1]) == ["hello", "proc"]  # the end record's last byte not here yet
    assert tags(_rec("hello", b"x") + evil[:-3]) == ["hello"]
    assert tags(_rec("hello", b"x") + b"forged 1\n1\n") == ["hello", ""]  # malformed: nothing more will count


def test_stuck_processes_fifo_paths_and_agent_cpu_are_read_bounded_with_odd_bytes_escaped():
    raw = (_rec("hello", b"x") + _rec("stuck", b"12 T do_signal_stop /usr/bin/ba sh\xff") +
           _rec("stuckfd", b"12 /app/in put") + b"".join(_rec("stuckfd", b"12 /f%d" % i) for i in range(9)) +
           _rec("stuckfd", b"99 /no/such/process") + _rec("stuck", b"13 S 0 ?") +
           _rec("agentcpu", b"100 350 100") + _rec("more", b"3 proc") + _rec("more", b"136 pre") +
           _rec("more", b"2 stuck") + _rec("end", b""))
    r = parse_report(parse_channel(raw))
    first, second = r.stuck
    assert (first.pid, first.state, first.wchan, first.exe) == (12, "T", "do_signal_stop", "/usr/bin/ba sh\\xff")
    assert first.fifo_paths == ["/app/in put", "/f0", "/f1", "/f2"]  # at most STUCK_FD_CAP
    assert (second.wchan, second.exe, second.fifo_paths) == ("0", "?", [])
    assert r.agent_cpu_sec == 2.5
    assert r.more_processes == 3 and r.omitted == {"proc": 3, "pre": 136, "stuck": 2}
    many = _rec("hello", b"x") + b"".join(_rec("stuck", b"%d S 0 /bin/x" % i) for i in range(1, 200)) + _rec("end", b"")
    assert len(parse_report(parse_channel(many)).stuck) == 64
    assert parse_report(parse_channel(_rec("hello", b"x") + _rec("agentcpu", b"1 2 0") + _rec("end", b""))).agent_cpu_sec is None


def test_the_judges_channel_cap_is_the_hosts_read_cap():
    """judge.h asserts at build time that the worst-case report stays well below CHANNEL_MAX."""
    import re

    from tasks_lib.container.judge.judge_exec import MAX_BYTES
    from tasks_lib.container.judge.judge_tools import SOURCES_DIR

    header = (SOURCES_DIR / "judge.h").read_text()
    assert re.search(r"#define CHANNEL_MAX \(8LL \* 1024 \* 1024\)", header) and MAX_BYTES == 8 * 1024 * 1024
    assert "_Static_assert(VERIFY_WORST < CHANNEL_MAX / 2" in header
