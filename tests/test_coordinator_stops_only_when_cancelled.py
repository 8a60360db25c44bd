"""A coordinator read its own Crashed (set by the zombie automation while it ran) as "the job is
stopping" and re-submitted none of a lost shard's trials: 4 of 12 unrecorded under a Completed
job. Only a cancellation of the job's own run is a request to stop."""

from prefect.states import Cancelled, Cancelling, Completed, Crashed, Failed, Running

from flows.coordinator import is_stop_request


def test_only_a_cancellation_stops_the_coordinator():
    assert is_stop_request(Cancelling()) and is_stop_request(Cancelled())
    for state in (Crashed(message="No heartbeat for 90 s"), Failed(), Running(), Completed(), None):
        assert not is_stop_request(state), state
