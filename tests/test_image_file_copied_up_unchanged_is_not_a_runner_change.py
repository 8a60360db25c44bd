"""An honest ``chmod -R go-w``, ``chown`` to the owner a file had, ``touch`` or ``compileall -f``
makes the overlay copy the image's file up whole: it showed as "changed" and, once the verifier
imported it, failed the gate (``toolchain-changed``) although the runner got the image's own bytes.
``WritableLayer.same_as_image`` tells such a copy from a change, without Docker: layers are plain
directories here, as overlay2's are on the host.

And a daemon that swaps a module in for test.sh and puts it back must not hide behind the bytecode
test.sh's Python rewrote for it (``runner_use._recompiled``)."""

from __future__ import annotations

import os

import pytest

from tasks_lib.container import writable_layer
from tasks_lib.container.writable_layer import Entry, WritableLayer
from tasks_lib.judge.runner_use import _recompiled

PATH = "/usr/lib/python3.11/argparse.py"


def _put(root, path: str, data: bytes = b"import os\n", mode: int = 0o644) -> str:
    host = f"{root}{path}"
    os.makedirs(os.path.dirname(host), exist_ok=True)
    with open(host, "wb") as f:
        f.write(data)
    os.chmod(host, mode)
    return host


@pytest.fixture
def layers(tmp_path):
    upper, top, base = (str(tmp_path / n) for n in ("upper", "top", "base"))
    for d in (upper, top, base):
        os.makedirs(d)
    _put(base, PATH)
    return WritableLayer("c", upper, [top, base], None), upper, top


def _entry(upper: str, kind: str = "file", change: str = "changed") -> Entry:
    return Entry(PATH, change, kind, host=upper + PATH)  # type: ignore[arg-type]


def test_chmod_to_the_same_mode_is_the_images_file(layers):
    layer, upper, _ = layers
    _put(upper, PATH)
    assert layer.same_as_image(_entry(upper))


@pytest.mark.parametrize("change", ["one byte", "mode", "owner"])
def test_a_real_change_is_still_a_change(layers, change):
    layer, upper, _ = layers
    host = _put(upper, PATH, b"import os\n" if change != "one byte" else b"import os;\n"[:10],
                0o755 if change == "mode" else 0o644)
    if change == "owner":
        os.chown(host, 1000, 1000)
    assert not layer.same_as_image(_entry(upper))


def test_a_file_the_agent_added_or_a_fifo_is_never_the_images(layers):
    layer, upper, _ = layers
    _put(upper, PATH)
    assert not layer.same_as_image(_entry(upper, change="added"))
    assert not layer.same_as_image(_entry(upper, kind="fifo"))


def test_compared_with_the_topmost_layer_that_has_it_and_a_whiteout_hides_the_rest(layers):
    layer, upper, top = layers
    _put(upper, PATH)
    _put(top, PATH, b"import sys\n")  # a later image layer changed it: that is the image's file
    assert not layer.same_as_image(_entry(upper))
    os.remove(top + PATH)
    os.mknod(top + PATH, 0o600 | 0o020000, os.makedev(0, 0))  # the later layer deleted it
    assert not layer.same_as_image(_entry(upper))


def test_symlink_with_the_images_target(layers):
    layer, upper, top = layers
    os.makedirs(os.path.dirname(upper + PATH), exist_ok=True)
    os.makedirs(os.path.dirname(top + PATH), exist_ok=True)
    os.remove(layer.lowers[1] + PATH)
    os.symlink("argparse_real.py", layer.lowers[1] + PATH)
    os.symlink("argparse_real.py", upper + PATH)
    assert layer.same_as_image(_entry(upper, kind="symlink"))
    os.remove(upper + PATH)
    os.symlink("evil.py", upper + PATH)
    assert not layer.same_as_image(_entry(upper, kind="symlink"))


def test_past_the_budget_a_file_counts_as_changed(layers, monkeypatch):
    layer, upper, _ = layers
    _put(upper, PATH)
    monkeypatch.setattr(writable_layer, "COMPARE_BUDGET", 5)
    assert not layer.same_as_image(_entry(upper))


def test_bytecode_of_a_swapped_module_is_left_out_of_the_agents_count():
    pyc = "/usr/lib/python3.11/__pycache__/argparse.cpython-311.pyc"
    swapped = [Entry(PATH, "changed"), Entry(pyc, "changed")]
    assert _recompiled(pyc, swapped)
    assert not _recompiled(PATH, swapped)
    # bytecode of a module pip installed (added) counts: an install's own bytes, not a swap's
    assert not _recompiled(pyc, [Entry(PATH, "added"), Entry(pyc, "changed")])
    assert not _recompiled(pyc, [Entry(pyc, "changed")])  # an evil pyc alone is the agent's bytes
