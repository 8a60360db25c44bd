"""The host-side model gateway: the only place the real provider key lives.

Why: trial containers run untrusted agent code with networking off. Each job runs one gateway on
a unix socket; the socket's directory is bind-mounted (read-only) into trial containers, where
``tbflow-relay`` (see ``relay_build``) exposes it on the container's loopback. A CLI inside gets a
per-trial token, never the key; the gateway swaps the token for the real key and forwards. Because
every model request passes here, the gateway also counts requests and tokens per trial from the
upstream's own responses: the second witness, next to the CLI's log, that the model was reached.

Rules it keeps (the HTTP side is ``gateway_http``, served by ``gateway_server``):

* Tokens: ``Authorization: Bearer <tok>``, ``x-api-key: <tok>``, ``x-goog-api-key: <tok>`` or a
  Gemini request's ``key=<tok>`` query parameter. Missing/unknown → 401 in the API's error shape,
  never forwarded, and decided from the headers: the body of such a request is never read.
  Every client auth header (and ``key=``) is stripped before forwarding.
* A token serves its trial's own API family and model only (``gateway_policy``): anything else
  → 403, with the evidence in the trial's usage (``GatewayUsage.refused``).
* Connections, requests, bytes and time are bounded per trial and in total (``gateway_limits``).
* Only model routes are forwarded (under ``/v1``: ``responses``, ``chat/completions``,
  ``messages``, ``messages/count_tokens``, ``GET models``; Gemini's
  ``/v1beta/models/<model>:generateContent``, ``:streamGenerateContent``, ``:countTokens``): the
  agent must not reach the account's other APIs (files, fine-tuning, ...) with our key. Anything
  else → 404.
* Streams pass through chunk by chunk (CLIs time out on buffered SSE); ``Accept-Encoding:
  identity`` is asked of the upstream so usage can be read on the way.
* Upstream errors pass through with their status, bodies redacted (providers echo keys); of the
  reply headers only an allowlist passes (``gateway_headers``). A hung
  upstream ends in 504 after ``read_timeout_sec`` without bytes; unreachable → 502.
* The key is never logged or written: ``SecretStr`` in the config, redaction of every error text
  and of the optional request log (which holds no headers and no tokens either). Nothing but the
  socket may live in the socket's directory: it is visible to every trial container of the job.

Configuration: ``gateway_config.UpstreamConfig`` (environment variables are listed there).
The CLI's base URL is the relay's ``http://127.0.0.1:PORT`` (+ ``/v1`` for OpenAI clients).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from tasks_lib.errors import TbflowError
from tasks_lib.gateway.exchange.exchange_recorder import ExchangeRecorder
from tasks_lib.gateway.gateway_config import GatewayConfigError, UpstreamConfig, UpstreamEndpoint
from tasks_lib.gateway.gateway_http import Outcome, error_body, gateway_app
from tasks_lib.gateway.gateway_limits import GatewayLimits, InFlight
from tasks_lib.gateway.gateway_policy import RefusedRequest, TrialScope
from tasks_lib.gateway.gateway_server import UnixAsgiServer
from tasks_lib.gateway.gateway_usage import GatewayUsage

__all__ = ["ModelGateway", "GatewayError", "GatewayUsage", "GatewayConfigError", "UpstreamConfig", "UpstreamEndpoint",
           "error_body"]

REDACTED = "[REDACTED]"
#: every per-trial token starts with this, so records can be scrubbed without knowing the token
TOKEN_PREFIX = "sk-tbflow-"
TOKEN_PATTERN = re.compile(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]+")


class GatewayError(TbflowError):
    """The gateway cannot start or was asked about a trial it does not know."""


class ModelGateway:
    """One job's gateway on ``socket_path``: ``start()``, ``register_trial()`` → token, ``usage()``, ``stop()``.

    One gateway serves all trials of a job; tokens keep them apart. Register a trial before its
    agent starts and unregister it when the agent stage ends, so a token is only good while its
    agent runs (the verifier never reaches the model). A request still in flight at unregister
    completes, but its usage is no longer added to the returned record. ``log_path`` (outside the
    socket's directory) gets one JSON line per request: trial, route, status, tokens, error.
    All methods are thread-safe.
    """

    def __init__(self, socket_path: Path | str, upstream: UpstreamConfig, *,
                 log_path: Path | str | None = None, limits: GatewayLimits | None = None) -> None:
        self.socket_path = Path(socket_path)
        self.upstream = upstream
        self.limits = limits or GatewayLimits()
        #: requests and body bytes held now; the server's thread alone changes it
        self.in_flight = InFlight(self.limits)
        self.log_path = Path(log_path) if log_path else None
        self._secrets = upstream.secrets()
        self._lock = threading.Lock()
        self._tokens: dict[str, str] = {}           # token -> trial id
        self._usage: dict[str, GatewayUsage] = {}   # trial id -> usage
        self._scopes: dict[str, TrialScope] = {}     # trial id -> what its token may spend
        self.rejected = 0
        self._server: UnixAsgiServer | None = None
        self.recorder = ExchangeRecorder(lambda text: TOKEN_PATTERN.sub(REDACTED, self.redact(text)))

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> "ModelGateway":
        """Listen on ``socket_path`` and serve; requests are answered once this returns."""
        if self._server is not None:
            raise GatewayError(f"the gateway on {self.socket_path} is already running")
        sock = self._listen()
        try:
            server = UnixAsgiServer(sock, gateway_app(self), f"model-gateway:{self.socket_path.name}",
                                    self.limits).start()
        except RuntimeError as exc:
            sock.close()
            self.socket_path.unlink(missing_ok=True)
            raise GatewayError(f"the gateway on {self.socket_path} did not start: {exc}") from exc
        self._server = server
        return self

    def _listen(self) -> socket.socket:
        """A listening socket at ``socket_path`` that container users of any uid may connect to."""
        path = self.socket_path
        if not path.parent.exists():
            path.parent.mkdir(parents=True)
            os.chmod(path.parent, 0o755)  # traversable by a non-root container user
        dir_fd, bind_to = None, str(path)
        if len(os.fsencode(bind_to)) >= 108:  # sun_path limit: bind through a short /proc path
            dir_fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
            bind_to = f"/proc/self/fd/{dir_fd}/{path.name}"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if path.is_socket():
                if _answers(bind_to):
                    raise GatewayError(f"another gateway already listens on {path}")
                path.unlink()
            elif path.exists():
                raise GatewayError(f"{path} exists and is not a socket")
            sock.bind(bind_to)
            os.chmod(path, 0o666)  # container users of any uid may connect
            sock.listen(socket.SOMAXCONN)
        except OSError as exc:
            sock.close()
            raise GatewayError(f"cannot listen on {path}: {exc}") from exc
        except GatewayError:
            sock.close()
            raise
        finally:
            if dir_fd is not None:
                os.close(dir_fd)
        return sock

    def stop(self) -> None:
        """Stop serving (requests in flight end now) and remove the socket; idempotent."""
        if self._server is not None:
            server, self._server = self._server, None
            try:
                server.stop()
            finally:
                self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> "ModelGateway":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- trials --------------------------------------------------------------------------------

    def register_trial(self, trial_id: str, scope: TrialScope | None = None, record_to: Path | None = None) -> str:
        """A fresh token for ``trial_id`` (an earlier one is revoked, its usage reset).

        ``scope``: the one API family and model the token serves (tbflow's trials always give
        one); None serves every configured upstream, for a caller that is not an agent's trial.
        ``record_to``: its model exchange is written there until it is unregistered.
        """
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        if record_to is not None:
            self.recorder.start(trial_id, record_to)
        with self._lock:
            self._revoke(trial_id)
            self._tokens[token] = trial_id
            self._usage[trial_id] = GatewayUsage()
            if scope is not None:
                self._scopes[trial_id] = scope
        return token

    def unregister_trial(self, trial_id: str) -> GatewayUsage:
        """Revoke the trial's token and return its final usage."""
        with self._lock:
            final = self._usage_locked(trial_id)
            self._revoke(trial_id)
            del self._usage[trial_id]
        self.recorder.stop(trial_id)
        return final

    def scope_of(self, trial_id: str) -> TrialScope | None:
        with self._lock:
            return self._scopes.get(trial_id)

    def usage(self, trial_id: str) -> GatewayUsage:
        with self._lock:
            return self._usage_locked(trial_id)

    def _usage_locked(self, trial_id: str) -> GatewayUsage:
        if trial_id not in self._usage:
            raise GatewayError(f"the gateway has no trial {trial_id!r}")
        return self._usage[trial_id].model_copy(deep=True)

    def _revoke(self, trial_id: str) -> None:
        for token in [t for t, owner in self._tokens.items() if owner == trial_id]:
            del self._tokens[token]
        self._scopes.pop(trial_id, None)

    def _trial_for(self, tokens: list[str]) -> tuple[str, GatewayUsage] | None:
        with self._lock:
            for token in tokens:
                trial = self._tokens.get(token)
                if trial is not None:
                    return trial, self._usage[trial]
            self.rejected += 1
            return None

    # -- bookkeeping ---------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        for key in self._secrets:
            text = text.replace(key, REDACTED)
        return text

    def _refuse(self, trial: tuple[str, GatewayUsage], evidence: RefusedRequest) -> None:
        with self._lock:
            trial[1].refuse(evidence)

    def _book(self, trial: tuple[str, GatewayUsage] | None, method: str, path: str, out: Outcome, t0: float) -> None:
        if trial is not None:
            with self._lock:
                trial[1].add(out.status, out.tokens, out.error)
            self.recorder.record(trial[0], method, path, out, t0)
        if self.log_path is not None:
            line = {"time": datetime.now(timezone.utc).isoformat(), "trial": trial[0] if trial else None,
                    "method": method, "path": path, "status": out.status,
                    "ms": round((time.monotonic() - t0) * 1000, 1),
                    "input_tokens": out.tokens.input_tokens if out.tokens else None,
                    "output_tokens": out.tokens.output_tokens if out.tokens else None, "error": out.error}
            with self._lock, self.log_path.open("a", encoding="utf-8") as fh:
                fh.write(self.redact(json.dumps(line)) + "\n")


def _answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(path)
            return True
        except OSError:
            return False
