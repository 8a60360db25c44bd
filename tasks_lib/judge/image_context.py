"""The image as the role rules need it (``runner_roles.ImageContext``), read from its layers on the
host and cached per image: its PATH commands, its Pythons' standard-library modules, its shared
libraries and what its runner loads (``runner_loads``). Split from ``runner_use``, which reads the
container's changes against it."""

from __future__ import annotations

import os
import re
from functools import lru_cache

from tasks_lib.container.writable_layer import LayerScan, WritableLayer, link_target
from tasks_lib.judge.runner_loads import runner_modules
from tasks_lib.judge.runner_roles import PY_SUFFIX, ImageContext


def image_context(layer: WritableLayer, path_env: str, home: str, scan: LayerScan) -> ImageContext:
    """The image's PATH commands and standard-library modules (cached per image), and the PATH
    directories as the container now resolves them (a PATH dir the agent made a symlink counts
    with its target)."""
    dirs = tuple(d.rstrip("/") or "/" for d in path_env.split(":") if d.startswith("/"))
    dirs += (home.rstrip("/") + "/.local/bin",)
    commands, stdlib, libs = _image_names(layer, dirs)
    links = {e.path: link_target(e) for e in scan.entries if e.type == "symlink" and e.path in dirs}
    resolved = tuple(os.path.normpath(os.path.join(os.path.dirname(p), t)) for p, t in links.items() if t)
    return ImageContext(path_dirs=dirs + resolved, home=home, commands=commands, stdlib=stdlib,
                        libs=libs, changes={e.path: e.change for e in scan.entries},
                        runner_modules=_runner_modules_of(tuple(layer.lowers)) if layer.lowers else frozenset())


@lru_cache(maxsize=64)
def _runner_modules_of(lowers: tuple[str, ...]) -> frozenset[str]:
    """Per image: what its runner loads (``runner_loads``), read from its layers."""
    layer = WritableLayer("", None, list(lowers), None)
    return runner_modules(layer.image_names, layer.read_image)


Names = tuple[frozenset[str], frozenset[str], frozenset[str]]
LIB_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")


def _image_names(layer: WritableLayer, dirs: tuple[str, ...]) -> Names:
    return _names_of(tuple(layer.lowers), dirs) if layer.lowers else (frozenset(), frozenset(), frozenset())


@lru_cache(maxsize=64)
def _names_of(lowers: tuple[str, ...], dirs: tuple[str, ...]) -> Names:
    """Per image (its layer directories): the commands in its PATH dirs, its Pythons' modules, and
    its shared libraries."""
    layer = WritableLayer("", None, list(lowers), None)
    commands = frozenset(n for d in dirs for n in layer.image_names(d))
    stdlib: set[str] = set()
    for base in ("/usr/lib", "/usr/local/lib"):
        for py in (n for n in layer.image_names(base) if re.fullmatch(r"python3\.\d+", n)):
            for sub in ("", "/lib-dynload"):
                stdlib.update(PY_SUFFIX.sub("", n) for n in layer.image_names(f"{base}/{py}{sub}")
                              if n not in ("site-packages", "dist-packages"))
    libs = frozenset(n for d in LIB_DIRS for n in layer.image_names(d) if ".so" in n)
    return commands, frozenset(n for n in stdlib if re.fullmatch(r"\w+", n)), libs

