"""What the agent changed in test.sh's own toolchain, from ``docker diff`` (the engine's view).

tbflow's judge does not depend on anything in the image (judge/judge.h), but ``test.sh`` does:
``python3``, ``pytest``, ``uvx``, the libraries they load. The agent, root in its container, can
replace those, and nothing inside the container can prevent that, so it is *detected*: right
after the agent, before the verifier, the container's changes as the engine records them are
checked for files that can change what test.sh runs, and listed in ``toolchain-changes.txt``
with a ``toolchain-changed`` flag. The reward stands (an agent may legitimately install tools);
a reader, and ``tbflow report --fail-on-flagged``, can see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.records.record_models import TrialFlag

EVIDENCE = "toolchain-changes.txt"
SYSTEM_DIRS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/", "/lib/", "/lib64/",
               "/usr/lib/", "/usr/lib64/", "/usr/local/lib/", "/root/.local/")
#: files that change what an interpreter or test runner loads, wherever they are
HOOK_NAMES = ("sitecustomize.py", "usercustomize.py", "conftest.py")
HOOK_PATHS = ("/etc/ld.so.preload", "/pytest.ini", "/tox.ini", "/setup.cfg", "/pyproject.toml")
KINDS = {0: "changed", 1: "added", 2: "deleted"}
#: what the engine itself puts into every container (Docker's init, bind-mounted), never the agent's
ENGINE_FILES = ("/sbin/docker-init", "/usr/sbin/docker-init", "/bin/docker-init", "/usr/bin/docker-init")
SHOW = 200


@dataclass
class ContainerDiff:
    """``docker diff`` of the trial container: (path, changed|added|deleted), parents dropped."""

    entries: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None

    @classmethod
    def take(cls, container: str) -> "ContainerDiff":
        try:
            raw = get_client().api.diff(container) or []
        except DOCKER_ERRORS as exc:
            return cls(error=str(exc))
        paths = sorted(c["Path"] for c in raw)
        parents = {paths[i] for i in range(len(paths) - 1) if paths[i + 1].startswith(paths[i] + "/")}
        return cls(entries=[(c["Path"], KINDS.get(c.get("Kind", 0), "changed")) for c in raw if c["Path"] not in parents])

    def deleted_under(self, dirs: tuple[str, ...]) -> list[str]:
        return sorted(p for p, k in self.entries if k == "deleted" and p.startswith(dirs))


def toolchain_changes(diff: ContainerDiff, path_env: str) -> list[str]:
    path_dirs = tuple(d.rstrip("/") + "/" for d in path_env.split(":") if d.startswith("/"))
    found = []
    for path, kind in diff.entries:
        if path in ENGINE_FILES:
            continue
        name = path.rsplit("/", 1)[-1]
        hook = name in HOOK_NAMES or name.endswith(".pth") or path in HOOK_PATHS
        in_path = any(path.startswith(d) and "/" not in path[len(d):] for d in path_dirs)
        system = path.startswith(SYSTEM_DIRS) and kind != "added"
        if hook or in_path or system:
            found.append(f"{kind} {path}")
    return sorted(found)


def toolchain_flag(diff: ContainerDiff, path_env: str, trial_dir: Path) -> TrialFlag | None:
    changes = toolchain_changes(diff, path_env)
    if not changes:
        return None
    lines = ["Files the agent added, changed or deleted that test.sh's own toolchain may use (docker diff after",
             "the agent, before the verifier). tbflow's judge does not use them; test.sh may.", "",
             *changes[:SHOW], *([f"... and {len(changes) - SHOW} more"] if len(changes) > SHOW else [])]
    (trial_dir / EVIDENCE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    shown = ", ".join(changes[:5]) + (f" and {len(changes) - 5} more" if len(changes) > 5 else "")
    return TrialFlag(kind="toolchain-changed", evidence=EVIDENCE,
                     message=f"the agent changed what test.sh may run: {shown}")
