"""README.md is the front door (issue 31): it must fit on a few screens, ≤ 10 KB, and still show
the two commands, among them the test command `.ci/run` calls, so the README and CI cannot drift
apart. Everything else lives in docs/ (the link test checks README's links reach it)."""

import re

from doc_pages import README, ROOT, without_code_blocks

LIMIT = 10 * 1024


def _commands(text: str) -> list[str]:
    """The command lines of README's first bash block (comments stripped)."""
    block = re.search(r"^```bash\n(.*?)^```", text, re.M | re.S)
    assert block, "README.md has no ```bash block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_is_at_most_10_kb():
    size = len(README.read_bytes())
    assert size <= LIMIT, f"README.md is {size} bytes, over {LIMIT}: move the detail to a docs/ page"


def test_readme_first_shows_the_run_and_the_test_command_ci_calls():
    text = README.read_text(encoding="utf-8")
    commands = _commands(text)
    assert commands[0] == "./tbflow run examples/tasks --harness oracle", commands
    test_cmd = commands[1]
    assert test_cmd == "scripts/test.sh", commands
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(rf"^bash {re.escape(test_cmd)}\b", ci, re.M), f".ci/run does not call {test_cmd}"


def test_readme_says_what_provider_means_and_how_to_reach_another_endpoint():
    prose = without_code_blocks(README.read_text(encoding="utf-8"))
    assert "PROVIDER/MODEL" in prose
    for var in ("TBFLOW_OPENAI_BASE_URL", "TBFLOW_ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        assert var in prose, var
