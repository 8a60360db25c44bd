"""A real S3 API on loopback for tests of job stores behind ``s3://`` URLs: moto's server in a
thread of the test process (127.0.0.1, a free port), with credentials given the way users give
them (``AWS_*`` in the environment), never in the URL."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import pytest

#: a value that must never appear in any file, record, report, log or artifact of a job
SECRET = "tbflow-test-secret-9f2c41d7e6"
KEY_ID = "AKIATBFLOWTESTKEY77"


@dataclass
class S3:
    endpoint: str
    bucket: str

    def fs(self):
        import fsspec

        fs = fsspec.filesystem("s3", skip_instance_cache=True)
        fs.invalidate_cache()
        return fs


@pytest.fixture
def s3(monkeypatch, tmp_path):
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("TBFLOW_STORE_CACHE", str(tmp_path / "store-cache"))
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    store = S3(endpoint, f"tbflow-jobs-{uuid.uuid4().hex[:8]}")  # moto keeps buckets per process, not per server
    store.fs().mkdir(store.bucket)
    try:
        yield store
    finally:
        server.stop()


def scan_for_secrets(blobs: dict[str, bytes]) -> list[str]:
    """Names of the blobs holding the secret key or its id."""
    return [name for name, data in blobs.items() if SECRET.encode() in data or KEY_ID.encode() in data]


def files_under(*roots) -> dict[str, bytes]:
    out = {}
    for root in roots:
        for dirpath, _, names in os.walk(root):
            for n in names:
                p = os.path.join(dirpath, n)
                if os.path.isfile(p) and not os.path.islink(p):
                    with open(p, "rb") as fh:
                        out[p] = fh.read()
    return out
