"""Which provider and model one trial's token may spend: the gateway's scope rule, as pure functions.

Why: the gateway holds every configured provider's key, and a token is handed to untrusted agent
code. Without a scope, a trial benchmarking ``openai/gpt-x`` could send ``POST /v1/messages`` with
its token and any ``model``: the gateway would attach the real Anthropic key, and book the spend
to the trial as if it were the configured model. So a token serves only its trial's API family
(the harness's wire API) and its model (the ``MODEL`` of ``PROVIDER/MODEL``), exactly as named.

Refused, not rewritten: a rewrite would hide what the agent asked for and score a run that did
not use the model the way it meant to; a refusal (403 in the API's error shape) is what a provider
does with a model a key may not use, and the request is kept as evidence in the trial's record
(``GatewayUsage.refused``: what was asked, when). Honest CLIs are configured to use the trial's
model for every call, side calls included (``harnesses/cli``), so they never meet this rule.

What is checked: the family from the path (decided before the body is read); the model from the
JSON body's ``model`` (OpenAI, Anthropic) or from the path (Gemini's ``models/<model>:...``).
Listing models (``GET /v1/models``) names none and spends nothing: it passes.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from pydantic import BaseModel, Field

from tasks_lib.gateway.gateway_config import WIRE_FAMILY, Family

_GEMINI_MODEL = re.compile(r"/v1(?:beta|alpha)?/models/([^/:]+):")
#: at most this many characters of an asked model are kept in the record (it is agent-chosen text)
MAX_ASKED = 200


class TrialScope(BaseModel):
    """What one trial's token opens: one API family and one model name, as the CLI sends it."""

    family: Family
    model: str = Field(min_length=1)

    @classmethod
    def of(cls, wire_api: str, model: str) -> "TrialScope":
        """The scope of a harness speaking ``wire_api`` for ``PROVIDER/MODEL`` (or a bare ``MODEL``)."""
        provider, _, name = model.partition("/")
        return cls(family=WIRE_FAMILY[wire_api], model=name or provider)


class RefusedRequest(BaseModel):
    """Evidence of one request the trial's token was refused for: what was asked, and when."""

    time: str
    method: str
    path: str
    asked_family: Family
    asked_model: str | None
    reason: str


def family_refusal(scope: TrialScope, family: Family) -> str | None:
    """Why a request of API ``family`` is refused for ``scope`` (None: it may go on)."""
    if family != scope.family:
        return f"this trial's token serves only the {scope.family} API (model {scope.model}), not {family}"
    return None


def asked_model(family: Family, method: str, path: str, body: bytes) -> str | None:
    """The model a request names: Gemini's from its path, the others' from the JSON body's ``model``."""
    if family == "gemini":
        found = _GEMINI_MODEL.match(path)
        return found.group(1) if found else None
    if method != "POST":
        return None
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    return model if isinstance(model, str) else None


def model_refusal(scope: TrialScope, method: str, asked: str | None) -> str | None:
    """Why a request naming ``asked`` is refused for ``scope`` (None: it may go on).

    A ``GET`` (listing or describing models) spends nothing and passes; a model call must name
    the trial's model exactly (no model, or another, is refused).
    """
    if method == "GET" or asked == scope.model:
        return None
    named = f"model {asked!r}" if asked is not None else "no model"
    return f"this trial's token serves only model {scope.model!r}; the request names {named}"


def refused(method: str, path: str, family: Family, asked: str | None, reason: str) -> RefusedRequest:
    """The record of one refusal, stamped now (UTC)."""
    return RefusedRequest(time=datetime.now(timezone.utc).isoformat(), method=method, path=path[:MAX_ASKED],
                          asked_family=family, asked_model=asked[:MAX_ASKED] if asked is not None else None,
                          reason=reason)
