"""A trial's start waited for the previous trial's progress-artifact update (a Prefect API call on
the thread that submits trials). Updates now go to a sender thread that keeps only the newest
(flows/job/latest_sender.py): ``put`` returns while a send is still in flight, superseded values
are dropped, the newest is always sent, a failing send does not stop later ones, and ``close``
sends what is pending."""

import threading

from flows.job.latest_sender import LatestSender


def test_put_returns_while_a_send_is_blocked_and_only_the_newest_follows():
    sent: list[int] = []
    first_in_flight, release = threading.Event(), threading.Event()

    def send(value: int) -> None:
        if value == 0:
            first_in_flight.set()
            assert release.wait(30)
        sent.append(value)

    sender = LatestSender(send, name="test-sender")
    sender.put(0)
    assert first_in_flight.wait(30)
    for value in range(1, 50):  # the API is slow: none of these may wait for it
        sender.put(value)
    assert sent == []  # still blocked in the first send, and put() returned every time
    release.set()
    sender.close()
    assert sent == [0, 49]  # 1..48 superseded, the newest sent


def test_a_failing_send_does_not_stop_later_ones_and_close_sends_what_is_pending():
    sent: list[str] = []

    def send(value: str) -> None:
        if value == "bad":
            raise RuntimeError("the API said no")
        sent.append(value)

    sender = LatestSender(send, name="test-sender")
    sender.put("bad")
    assert sender.flush()
    sender.put("good")
    sender.close()
    assert sent == ["good"]
    assert not sender._thread.is_alive()


def test_sends_are_spaced_but_close_sends_the_newest_at_once():
    """A progress update per trial start and end was a server write each (~9 ms of CPU a trial at
    445 trials): sends are spaced by ``min_interval``, and the job's end does not wait for it."""
    sent: list[int] = []
    first_sent = threading.Event()

    def send(value: int) -> None:
        sent.append(value)
        first_sent.set()

    sender = LatestSender(send, name="test-sender", min_interval=600)
    sender.put(0)
    assert first_sent.wait(30)
    for value in range(1, 20):
        sender.put(value)
    sender.close(timeout=30)  # well inside the 600-s interval
    assert not sender._thread.is_alive()
    assert sent == [0, 19]
