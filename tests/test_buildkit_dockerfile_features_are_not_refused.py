"""A Dockerfile written for BuildKit (``RUN --mount``, heredocs, ``COPY --chmod``; Harbor builds
with it) used to be refused by the legacy builder, and its trial was invalid: environment. It
builds now, and the image holds what each instruction made.

Skipped only on an engine older than BuildKit's heredocs (Docker 23): ``scripts/setup.sh``
upgrades such an engine, so CI never skips it."""

from __future__ import annotations

import uuid

import pytest

from task_factory import make_task, record_of

pytestmark = pytest.mark.docker

MIN_ENGINE = (23, 0)

DOCKERFILE = """FROM tbflow/base:bookworm
RUN --mount=type=cache,target=/var/cache/tbflow-test echo cached > /var/cache/tbflow-test/x \\
    && cp /var/cache/tbflow-test/x /cached.txt
RUN <<EOF
set -e
echo "run heredoc" > /heredoc.txt
EOF
COPY <<EOF /copied.txt
copy heredoc
EOF
COPY --chmod=0750 tool.sh /tool.sh
"""

CHECK = ('grep -qx cached /cached.txt && grep -qx "run heredoc" /heredoc.txt'
         ' && grep -qx "copy heredoc" /copied.txt && [ "$(stat -c %a /tool.sh)" = 750 ]')


def _engine_version(client) -> tuple[int, ...]:
    version = str(client.version().get("Version", "0"))
    return tuple(int(part) for part in version.split("+")[0].split("-")[0].split(".")[:2])


def test_run_mount_heredocs_and_copy_chmod_build_and_land_in_the_image(run_job, docker_ready, tmp_path, monkeypatch):
    if _engine_version(docker_ready) < MIN_ENGINE:
        pytest.skip(f"engine {docker_ready.version().get('Version')} predates BuildKit heredocs (Docker 23); "
                    "scripts/setup.sh upgrades it")
    import tasks_lib.trial.images as images

    monkeypatch.setattr(images, "extra_build_options", lambda: {"network_mode": "none"})  # tests run offline
    ds = tmp_path / "ds"
    # A nonce makes the image new on every run: an image of an earlier session on the same engine
    # (one killed before its cleanup) made this trial "reused" and failed CI once.
    dockerfile = DOCKERFILE + f"RUN echo {uuid.uuid4().hex}\n"
    make_task(ds, "buildkit-features", dockerfile=dockerfile, env_files={"tool.sh": "#!/bin/sh\n"}, check=CHECK)
    rec = record_of(run_job(ds), "buildkit-features")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert rec.image.source == "built"
