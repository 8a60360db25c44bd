"""A host-side agent's ``download`` spooled whatever the container path held, with no deadline
(issue 29): an agent that leaves a sparse 1 TiB file where its plug-in downloads made tbflow
stream it for hours and fill the host's temp dir. Each download is now cut at a number of archive
bytes and at a deadline with ``DownloadBoundExceeded`` (nothing kept on the host), which a plug-in
can catch; an honest download of a few MB comes through whole, and the job goes on: the trial of a
plug-in that catches the error is scored, one that lets it go up is the harness's failure, not the
environment's. Real engine, real Prefect."""

import json
import textwrap

from host_plugin_source import REFERENCE_BASE
from task_factory import make_task, record_of
from tasks_lib.trial import host_env

BOUND = 8 * 1024 * 1024
PLUGINS = REFERENCE_BASE + textwrap.dedent('''\
    class Catches(_Base):
        """Downloads what its agent left: a sparse 1 TiB file, a few MB of real work."""

        name = "catches"

        def run(self, session):
            env, seen = session.env, {}
            env.exec("truncate -s 1T /app/huge && head -c 3000000 /dev/urandom > /app/work.bin && sha256sum /app/work.bin > /app/work.sum")
            for name in ("huge", "work.bin", "work.sum"):
                dst = session.logs_dir / name
                try:
                    env.download(f"/app/{name}", dst)
                    seen[name] = {"ok": dst.stat().st_size}
                except DownloadBoundExceeded as exc:
                    seen[name] = {"refused": str(exc), "kept": dst.exists()}
            (session.logs_dir / "downloads.json").write_text(json.dumps(seen))
            env.exec("echo solved > /app/done.txt")


    class LetsItGoUp(_Base):
        name = "lets-it-go-up"

        def run(self, session):
            session.env.exec("truncate -s 1T /app/huge")
            session.env.download("/app/huge", session.logs_dir / "huge")
''')


def test_download_of_a_sparse_terabyte_is_cut_and_the_job_goes_on(run_job, tmp_path, monkeypatch):
    monkeypatch.setattr(host_env.SandboxEnv, "max_download_bytes", BOUND)
    plugin = tmp_path / "plugins.py"
    plugin.write_text(PLUGINS)
    make_task(tmp_path / "ds", "collect", check="test -s /app/done.txt")
    result = run_job(tmp_path / "ds", harnesses=[f"{plugin}:Catches", f"{plugin}:LetsItGoUp"], concurrency=2)
    trials = tmp_path / "jobs" / "job" / "trials"

    caught = record_of(result, "collect", "catches")
    assert (caught.validity.status, caught.validity.reward) == ("scored", 1.0), caught.validity
    seen = json.loads((trials / caught.trial_id / "host-agent" / "downloads.json").read_text())
    assert seen["huge"]["kept"] is False and f"download bound of {BOUND} bytes" in seen["huge"]["refused"], seen
    assert seen["work.bin"] == {"ok": 3000000}, seen
    digest = (trials / caught.trial_id / "host-agent" / "work.sum").read_text().split()[0]
    import hashlib

    assert hashlib.sha256((trials / caught.trial_id / "host-agent" / "work.bin").read_bytes()).hexdigest() == digest

    raised = record_of(result, "collect", "lets-it-go-up")
    assert (raised.validity.status, raised.validity.kind) == ("invalid", "harness"), raised.validity
    assert "DownloadBoundExceeded" in raised.validity.reason or "download bound" in raised.validity.reason, \
        raised.validity


def test_download_that_outlasts_its_deadline_is_cut(run_job, tmp_path, monkeypatch):
    monkeypatch.setattr(host_env.SandboxEnv, "max_download_bytes", 1 << 50)
    monkeypatch.setattr(host_env, "DOWNLOAD_MAX_SEC", 3.0)
    plugin = tmp_path / "plugins.py"
    plugin.write_text(PLUGINS)
    make_task(tmp_path / "ds", "collect", check="test -s /app/done.txt")
    result = run_job(tmp_path / "ds", harnesses=[f"{plugin}:Catches"])
    rec = record_of(result, "collect", "catches")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    seen = json.loads((tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "host-agent" / "downloads.json").read_text())
    assert seen["huge"]["kept"] is False and "took longer than 3 s" in seen["huge"]["refused"], seen
    # (the honest download is checked in the test above: under this short deadline a loaded machine may cut it too)
