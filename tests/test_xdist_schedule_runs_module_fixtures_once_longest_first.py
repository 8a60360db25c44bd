"""The suite's xdist schedule (tests/xdist_schedule.py): a module-scoped fixture's tests share one
group (the hostile-agent job ran on three workers at once before), the longest files start first."""

from __future__ import annotations

from xdist_schedule import STARTED_FIRST, module_fixture_group, start_rank

pytest_plugins = ["pytester"]

SOURCE = """
import pytest

@pytest.fixture(scope="module")
def shared_job():
    return 1

@pytest.fixture
def per_test():
    return 2

def test_uses_the_module_job(shared_job):
    pass

def test_uses_it_through_another_fixture(per_test, shared_job):
    pass

def test_uses_only_a_function_fixture(per_test):
    pass

def test_uses_a_builtin_fixture_only(tmp_path):
    pass
"""


def test_tests_of_a_module_scoped_fixture_share_one_group(pytester):
    items = pytester.getitems(SOURCE)
    groups = {item.name: module_fixture_group(item) for item in items}
    module = items[0].nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")
    assert groups == {"test_uses_the_module_job": f"module-{module}",
                      "test_uses_it_through_another_fixture": f"module-{module}",
                      "test_uses_only_a_function_fixture": None,
                      "test_uses_a_builtin_fixture_only": None}


def test_listed_long_files_start_first_in_their_order_the_rest_after():
    assert [start_rank(f"tests/{name}") for name in STARTED_FIRST] == list(range(len(STARTED_FIRST)))
    assert start_rank("tests/test_some_quick_unit.py") == len(STARTED_FIRST)
    assert start_rank("tests/" + STARTED_FIRST[0]) < start_rank("tests/" + STARTED_FIRST[-1])


def test_every_listed_long_file_exists():
    from pathlib import Path

    here = Path(__file__).parent
    assert [n for n in STARTED_FIRST if not (here / n).is_file()] == []
