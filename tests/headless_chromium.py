"""Open a file in headless Chromium (Debian's ``chromium``, installed by scripts/setup.sh): the
DOM after its scripts ran, or a screenshot. A fresh profile per call, no network services, so a
page that tried to load anything from the network would show it as missing, not fetch it."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions"]


def _run(args: list[str], timeout: float = 120) -> str:
    exe = shutil.which("chromium")
    assert exe, "chromium is missing: scripts/setup.sh installs it"
    with tempfile.TemporaryDirectory(prefix="tbflow-chromium-") as profile:
        done = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump_dom(path: Path, fragment: str = "") -> str:
    """The page's DOM as serialized after load (filters applied from ``#fragment``)."""
    return _run(["--dump-dom", Path(path).resolve().as_uri() + (f"#{fragment}" if fragment else "")])


def screenshot(path: Path, out: Path, size: str = "1200,900") -> Path:
    _run([f"--screenshot={Path(out).resolve()}", f"--window-size={size}", "--hide-scrollbars",
          Path(path).resolve().as_uri()])
    return out
