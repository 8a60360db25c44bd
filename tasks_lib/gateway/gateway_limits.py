"""How much one trial, and all trials together, may hold in the gateway: connections, requests, bytes, time.

Why: the gateway runs inside the process that runs the job, and its socket is reachable by agent
code in every trial container. Unbounded, one agent could make that process hold gigabytes
(bodies read before the token was checked) or every connection it can take, and so stop the job
or starve the other trials. The bounds, each sized so an honest CLI never meets it:

* ``max_connections``: open connections to the socket, all trials together; one more is closed
  at once (an idle connection costs the process a descriptor, so the count is bounded, not only
  the requests). A request over the same bound gets uvicorn's 503.
* ``per_container_connections``: open connections from one trial container (told apart by the
  kernel before any byte, ``gateway_peers``); one more is closed at once. The relay opens one per
  connection of the CLI, and CLIs keep a few.
* ``headers_deadline_sec``: a connection must have sent a request's headers this long after it
  opened (or after its previous reply plus the idle keep-alive time), else it is closed: a
  slow-loris connection cannot hold a slot for ever. Enforced in ``gateway_server``.
* The body is read only *after* the token in the headers was accepted (``gateway_http``), so a
  request without a valid token costs one small buffer, never its body.
* ``max_body_bytes``: one request's body. 32 MiB is Anthropic's own request size limit, above
  OpenAI's and Gemini's inline limits: a CLI's long history (a 1M-token context is about 4 MiB of
  text, images included) fits with room.
* ``body_deadline_sec``: the whole body must arrive within this (408 otherwise).
* ``per_trial_requests``: requests in flight for one trial's token (429 beyond): CLIs send a few
  at once (sub-agents, a title request), never dozens.
* ``per_trial_body_bytes``: request bodies one trial holds at once (429 beyond): four requests of
  the largest size, so one trial cannot take the whole of ``total_body_bytes`` from the others.
* ``total_body_bytes``: request bodies held at once, all trials together (503 beyond, which CLIs
  retry), so that many trials each under their own bound still cannot add up to the host's memory.

``InFlight`` is the live count, kept on the server's event loop (one thread: no lock needed).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

MIB = 1024 * 1024


class GatewayLimits(BaseModel):
    """The gateway's bounds (see the module docstring for why each has its value)."""

    max_connections: int = Field(default=256, ge=2)
    per_container_connections: int = Field(default=32, ge=1)
    headers_deadline_sec: float = Field(default=30.0, gt=0)
    max_body_bytes: int = Field(default=32 * MIB, ge=1)
    body_deadline_sec: float = Field(default=120.0, gt=0)
    per_trial_requests: int = Field(default=16, ge=1)
    per_trial_body_bytes: int = Field(default=128 * MIB, ge=1)
    total_body_bytes: int = Field(default=512 * MIB, ge=1)


class LimitExceeded(Exception):
    """A bound was hit: ``status`` is the HTTP status to answer with, the message says which bound."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


class InFlight:
    """Requests and body bytes held now, per trial and in total, against ``limits``."""

    def __init__(self, limits: GatewayLimits) -> None:
        self.limits = limits
        self.requests: dict[str, int] = {}
        self.trial_bytes: dict[str, int] = {}
        self.body_bytes = 0

    def enter(self, trial: str) -> None:
        """Count one more request of ``trial``; ``LimitExceeded`` (429) past its bound."""
        held = self.requests.get(trial, 0)
        if held >= self.limits.per_trial_requests:
            raise LimitExceeded(429, f"more than {self.limits.per_trial_requests} requests at once for this trial")
        self.requests[trial] = held + 1

    def leave(self, trial: str, body_bytes: int) -> None:
        """The request of ``trial`` ended: its slot and its ``body_bytes`` are free again."""
        for count, less in ((self.requests, 1), (self.trial_bytes, body_bytes)):
            left = count.get(trial, 0) - less
            if left > 0:
                count[trial] = left
            else:
                count.pop(trial, None)
        self.body_bytes -= body_bytes

    def take_bytes(self, trial: str, held: int, more: int) -> None:
        """Account ``more`` body bytes for a request of ``trial`` holding ``held``; ``LimitExceeded``
        past a bound (413 for the request's own, 429 for the trial's, 503 for the total). The caller
        gives them back via ``leave``."""
        if held + more > self.limits.max_body_bytes:
            raise LimitExceeded(413, f"request body over {self.limits.max_body_bytes} bytes")
        trial_held = self.trial_bytes.get(trial, 0)
        if trial_held + more > self.limits.per_trial_body_bytes:
            raise LimitExceeded(429, f"more than {self.limits.per_trial_body_bytes} request bytes at once for this trial")
        if self.body_bytes + more > self.limits.total_body_bytes:
            raise LimitExceeded(503, "the gateway holds as many request bytes as it may; retry shortly")
        self.trial_bytes[trial] = trial_held + more
        self.body_bytes += more
