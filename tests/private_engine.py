"""A Docker engine of the test's own, to restart at will: the machine's engine is shared and must
never be stopped. Own data root, exec root (so its own managed containerd), pidfile and unix
socket; no bridge, no iptables. The base image is copied in with ``docker save | docker load``
(nothing can be pulled here).

It runs in a network namespace of its own (``unshare --net``): a dockerd started with
``--bridge=none`` *deletes the host's ``docker0`` interface* at start-up (libnetwork's
``removeDefaultBridgeInterface``), which breaks every build and bridged container of the
machine's engine. Its unix socket is a file, so it is reached from the host all the same."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import docker


class PrivateEngine:
    def __init__(self) -> None:
        # short path: the containerd socket under the exec root must fit a unix socket path
        self.root = Path(tempfile.mkdtemp(prefix="tbflow-dk-", dir="/tmp"))
        self.sock = self.root / "docker.sock"
        self.host = f"unix://{self.sock}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> None:
        log = open(self.root / "dockerd.log", "ab")
        self.proc = subprocess.Popen(
            ["unshare", "--net", "dockerd", "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
             "--pidfile", str(self.root / "docker.pid"), "-H", self.host, "--bridge=none", "--iptables=false",
             "--ip-masq=false"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                docker.DockerClient(base_url=self.host, timeout=5).ping()
                return
            except Exception:  # noqa: BLE001 - not up yet
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = (self.root / "dockerd.log").read_text()[-2000:]
                    raise RuntimeError(f"private dockerd did not start: {log}") from None
                time.sleep(0.3)

    def stop(self, timeout: float = 60) -> None:
        """Stop it the way a restart does (SIGTERM: containers are stopped, the daemon exits)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def client(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.host, timeout=120)

    def load_image(self, image: str) -> None:
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        subprocess.run(["docker", "-H", self.host, "load", "-q"], stdin=save.stdout, check=True,
                       capture_output=True, timeout=300)
        save.stdout.close()
        assert save.wait(60) == 0

    def remove(self) -> None:
        self.stop()
        subprocess.run(["umount", "-R", "-l", str(self.root / "exec")], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)
