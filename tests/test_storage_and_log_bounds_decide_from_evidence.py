"""The decisions behind the per-trial bounds (issue 29), without Docker: which storage drivers can
hold ``storage_mb`` themselves, what every trial container is created with (no log, pids, the
quota only where the engine may hold it), when a walk of the writable layer is past the bound, and
that the walk counts the blocks a file really holds (a sparse 1 TiB file fills no disk) without
following the agent's links."""

import os

from tasks_lib.container import layer_usage as lu
from tasks_lib.container.trial_limits import host_limits, quota_possible, quota_refused
from tasks_lib.trial.storage_watch import exceeded_message, over_bound


def test_only_drivers_with_a_quota_get_the_storage_opt(monkeypatch):
    monkeypatch.delenv("TBFLOW_PIDS_LIMIT", raising=False)
    assert quota_possible("overlay2", [["Backing Filesystem", "xfs"], ["Supports d_type", "true"]])
    assert not quota_possible("overlay2", [["Backing Filesystem", "extfs"]])
    assert not quota_possible("overlay2", None) and quota_possible("btrfs", None)
    assert host_limits(50, quota=True)["storage_opt"] == {"size": "50M"}
    plain = host_limits(50, quota=False)
    assert "storage_opt" not in plain and plain["log_config"]["type"] == "none" and plain["pids_limit"] == 4096
    assert "storage_opt" not in host_limits(None, quota=True)
    assert quota_refused(Exception("--storage-opt is supported only for overlay over xfs with 'pquota' mount option"))
    assert not quota_refused(Exception("Conflict. The container name is already in use"))


def test_layer_walk_counts_allocated_blocks_and_follows_no_link(tmp_path):
    upper = tmp_path / "upper"
    (upper / "app").mkdir(parents=True)
    (upper / "app" / "real.bin").write_bytes(os.urandom(2 * 1024 * 1024))
    with open(upper / "app" / "sparse", "wb") as fh:
        fh.truncate(1 << 40)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(os.urandom(4 * 1024 * 1024))
    (upper / "app" / "link").symlink_to(outside, target_is_directory=True)
    usage = lu.layer_usage(str(upper))
    assert 2 * 1024 * 1024 <= usage.bytes < 3 * 1024 * 1024, usage
    assert usage.largest[0][1] == "/app/real.bin" and not usage.capped
    assert not over_bound(usage, 3) and over_bound(usage, 1)
    assert "2 MB" in exceeded_message(usage, 1, 4.2) and "storage_mb of 1 MB" in exceeded_message(usage, 1, 4.2)


def test_a_layer_of_more_files_than_a_walk_reads_is_past_any_bound(tmp_path):
    for i in range(20):
        (tmp_path / f"f{i}").touch()
    usage = lu.layer_usage(str(tmp_path), max_entries=10)
    assert usage.capped and usage.entries == 10 and over_bound(usage, 10**6)
    assert "more than 10 files" in exceeded_message(usage, 10**6, 1.0)
