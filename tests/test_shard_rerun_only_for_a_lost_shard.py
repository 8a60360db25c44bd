"""Issue 10: which ended shard runs the coordinator submits again (flows/job/shard_reruns.py). The
end-to-end tests cover a crashed shard (re-run, bounded) and a refused one (never); these pin
the other outcomes with Prefect's own states, without a server: a shard cancelled by someone
else is re-run, a completed one or one whose trials are all recorded is not, and nothing is
re-run while the job itself is being cancelled (Prefect may cancel its shards first)."""

from prefect.states import Cancelled, Completed, Crashed, Failed

from flows.job.run_ui import REFUSED
from flows.job.shard_reruns import ShardRun, after_end

SHARD = ShardRun("nightly", 2, 3, ["a.oracle.1", "b.oracle.1", "c.oracle.1"])


def test_a_shard_cancelled_by_someone_else_is_rerun_for_its_unrecorded_trials_only():
    out = after_end(SHARD, Cancelled(message="cancelled from the UI"), ["c.oracle.1"], 2)
    assert out.next == ShardRun("nightly", 2, 3, ["c.oracle.1"], rerun=1)
    assert out.next.name == "nightly shard 2/3 (re-run 1)"
    assert out.log == ("shard 2/3 (flow run 'nightly shard 2/3') ended Cancelled: cancelled from the UI; lost with 1 "
                       "of its 3 trials not recorded: re-submitted them as 'nightly shard 2/3 (re-run 1)' (re-run 1 "
                       "of at most 2)")


def test_nothing_is_rerun_while_the_job_is_being_cancelled():
    out = after_end(SHARD, Cancelled(), ["a.oracle.1"], 2, job_stopping=True)
    assert out.next is None and "the job is stopping" in (out.log or "")


def test_a_completed_or_fully_recorded_or_refused_shard_is_not_rerun():
    assert after_end(SHARD, Completed(), ["a.oracle.1"], 2).next is None
    assert after_end(SHARD, Crashed(), [], 2).next is None
    assert after_end(SHARD, Failed(name=REFUSED, message="identity differs"), ["a.oracle.1"], 2).next is None
    assert after_end(SHARD, Failed(message="boom"), ["a.oracle.1"], 2).next is not None


def test_the_rerun_bound_counts_reruns_of_the_same_shard():
    second = ShardRun("nightly", 2, 3, ["a.oracle.1"], rerun=2)
    assert after_end(second, Crashed(), ["a.oracle.1"], 2).next is None
    assert after_end(second, Crashed(), ["a.oracle.1"], 3).next == ShardRun("nightly", 2, 3, ["a.oracle.1"], rerun=3)
    assert after_end(SHARD, Crashed(), ["a.oracle.1"], 0).next is None


def test_a_multi_line_state_message_is_logged_as_one_line():
    out = after_end(SHARD, Crashed(message="worker died:\n\x1b[31mexit 137\x1b[0m\n"), ["a.oracle.1"], 2)
    assert "worker died: exit 137;" in (out.log or "") and "\n" not in (out.log or "")
