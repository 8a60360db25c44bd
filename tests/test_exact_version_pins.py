"""Harness versions are exact: a range or a tag would let two runs compare different agents.

Refusals are typed (``VersionPinError``, a ``HarnessSetupError``: the trial is invalid: harness)
and name both the harness and the value, so the user sees which pin is wrong.
"""

from __future__ import annotations

import pytest

from harnesses.cli.claude_code import ClaudeCodeHarness
from harnesses.cli.codex import CodexHarness
from harnesses.bundles.npm_bundle import NpmPackage, PackageFetchError, VersionPinError, check_exact_version
from harnesses.cli.opencode import OpencodeHarness
from harnesses.cli.pi import PiHarness
from tasks_lib.errors import HarnessSetupError

HARNESSES = [CodexHarness, OpencodeHarness, PiHarness, ClaudeCodeHarness]
REFUSED = ["latest", "next", "^1.2", "^1.2.3", "~1", "~1.2.3", "1.x", "1.2.x", "*", ">=1", ">=1.0.0 <2", "1.2",
           "1", "v1.2.3", "=1.2.3", "01.2.3", "1.02.3", "1.2.3 ", " 1.2.3", "1.2.3\n", "1.2.3+build.5",
           "1.2.3-", "1.2.3-01", "1.2.3 || 2.0.0", "", "1.2.3-beta..1"]
ACCEPTED = ["1.2.3", "0.0.0", "10.20.30", "1.2.3-beta.1", "1.2.3-rc.0", "0.169.0-linux-x64", "2.1.332", "1.0.0-alpha-a.b-c"]


@pytest.mark.parametrize("value", REFUSED)
def test_ranges_tags_and_sloppy_versions_are_refused(value):
    with pytest.raises(VersionPinError) as err:
        check_exact_version("codex", value)
    assert isinstance(err.value, HarnessSetupError)
    assert err.value.harness == "codex" and err.value.value == value
    assert "harness codex" in str(err.value) and repr(value) in str(err.value)


@pytest.mark.parametrize("value", ACCEPTED)
def test_exact_semver_is_accepted(value):
    assert check_exact_version("codex", value) == value


def test_build_metadata_refusal_says_why():
    with pytest.raises(VersionPinError, match="build metadata is ignored by npm"):
        check_exact_version("pi", "0.73.1+local")


@pytest.mark.parametrize("cls", HARNESSES, ids=lambda c: c.name)
@pytest.mark.parametrize("value", ["latest", "^0.1.0", "1.x"])
def test_each_harness_refuses_a_non_exact_version_naming_itself(cls, value):
    with pytest.raises(VersionPinError) as err:
        cls(version=value)
    assert err.value.harness == cls.name and err.value.value == value
    assert cls.name in str(err.value)


@pytest.mark.parametrize("cls", HARNESSES, ids=lambda c: c.name)
def test_default_version_of_every_cli_harness_is_an_exact_pin(cls):
    """Whatever the pinned default is (it changes with each upgrade), it passes the same check a
    user's ``--harness NAME@VERSION`` does, and a harness built without a version uses it."""
    h = cls()
    assert h.version == cls.version and h.uses_pinned_version and h.kind == "model"
    assert check_exact_version(cls.name, cls.version) == cls.version
    other = cls(version="0.0.1")  # an exact version that is not the pin: allowed, and not called pinned
    assert other.version == "0.0.1" and not other.uses_pinned_version


def test_another_exact_version_drops_the_pinned_integrity():
    """The class pins integrity for its own version only; any other version is resolved, and recorded."""
    pinned = CodexHarness().platform_package()
    other = CodexHarness(version="0.170.0").platform_package()
    assert pinned.integrity and pinned.integrity.startswith("sha512-")
    assert (other.name, other.version, other.integrity) == ("@openai/codex", "0.170.0-linux-x64", None)
    assert PiHarness(version="0.73.2").package().integrity is None


def test_npm_package_validates_version_name_and_integrity():
    with pytest.raises(VersionPinError) as err:
        NpmPackage("is-number", "^7.0.0", harness="probe")
    assert err.value.harness == "probe" and err.value.value == "^7.0.0"
    with pytest.raises(VersionPinError, match="harness is-number"):
        NpmPackage("is-number", "latest")
    for bad_name in ["--registry=x", "../etc", "Is-Number", "@scope", "a b"]:
        with pytest.raises(PackageFetchError, match="not a valid npm package name"):
            NpmPackage(bad_name, "1.0.0")
    for bad_sri in ["sha1-abc", "sha512-short", "md5-" + "a" * 24]:
        with pytest.raises(PackageFetchError):
            NpmPackage("is-number", "7.0.0", integrity=bad_sri)
    assert NpmPackage("@openai/codex", "0.169.0-linux-x64").spec == "@openai/codex@0.169.0-linux-x64"


def test_pinned_pi_installs_from_a_lockfile_of_its_whole_tree_not_todays_ranges():
    """pi's dependencies are ranges: a registry that listed a new AWS SDK release before the versions
    it needs made every fresh pi install fail (CI, 2026-12-03). The pinned version's tree is locked,
    every package exact with its integrity, the top one the pin itself."""
    import json

    from harnesses.cli.pi import LOCKS

    lock = json.loads((LOCKS / f"pi-{PiHarness.version}.package-lock.json").read_text())
    packages = lock["packages"]
    assert packages[""]["dependencies"] == {"@mariozechner/pi-coding-agent": PiHarness.version}
    top = packages["node_modules/@mariozechner/pi-coding-agent"]
    assert (top["version"], top["integrity"]) == (PiHarness.version, PiHarness.integrity)
    tree = {path: meta for path, meta in packages.items() if path}
    assert len(tree) > 100
    for path, meta in tree.items():
        assert check_exact_version("pi", meta["version"]) == meta["version"], path
        assert meta["integrity"].startswith("sha512-"), path
