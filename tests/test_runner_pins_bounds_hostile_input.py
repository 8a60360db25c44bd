"""Hostile test.sh input cannot blow the recogniser up: size and line count are bounded before any
parsing, control characters (NUL, CR of a CRLF file) are refused, and the work is linear."""

from __future__ import annotations

import time

from runner_pins_fixtures import STANDARD, fixture_test_sh

from tasks_lib.task.runner_pins import MAX_BYTES, MAX_LINES, NotPinned, RunnerPins, read_runner_pins


def refused(text: str) -> NotPinned:
    verdict = read_runner_pins(text)
    assert isinstance(verdict, NotPinned)
    return verdict


def test_a_file_over_the_size_bound_is_refused_before_parsing():
    started = time.monotonic()
    verdict = refused("#!/bin/bash\n" + "#" * (50 * MAX_BYTES))
    assert "bytes" in verdict.reason
    assert time.monotonic() - started < 1.0


def test_multibyte_text_is_bounded_by_its_bytes_not_its_characters():
    text = fixture_test_sh(STANDARD) + "# " + "é" * (MAX_BYTES // 2) + "\n"
    assert len(text) < MAX_BYTES < len(text.encode())
    assert "bytes" in refused(text).reason


def test_too_many_lines_are_refused():
    assert "lines" in refused("#!/bin/bash\n" + "\n" * MAX_LINES).reason


def test_a_crlf_file_and_a_nul_byte_are_refused_with_their_line():
    assert refused(fixture_test_sh(STANDARD).replace("\n", "\r\n")).line == 1
    assert refused(fixture_test_sh(STANDARD).replace("# guard", "# gu\x00ard")).line == 12


def test_a_continuation_running_past_the_end_is_refused():
    refused(fixture_test_sh(STANDARD) + "uvx \\")


def test_pathological_lines_stay_fast():
    long_cp = "cp " + "/a" * (MAX_BYTES // 5) + " /b"  # long but plain: accepted as a setup command
    quotes = 'echo "' + '"' * 8000
    continued = "uvx \\\n" * (MAX_LINES - 10)
    started = time.monotonic()
    verdicts = [read_runner_pins(fixture_test_sh(STANDARD).replace("\nuvx \\\n", f"\n{body}\nuvx \\\n", 1))
                for body in (long_cp, quotes, continued)]
    assert time.monotonic() - started < 2.0
    assert [type(v) for v in verdicts] == [RunnerPins, NotPinned, NotPinned]


def test_tabs_are_ordinary_blanks():
    text = fixture_test_sh(STANDARD).replace("  -p 3.13", "\t-p\t3.13", 1)
    assert isinstance(read_runner_pins(text), RunnerPins)
