"""What ``PROVIDER`` in ``--model PROVIDER/MODEL`` means, and the one combination refused.

The API a trial's requests go to is the harness's (its ``wire_api``: codex speaks OpenAI's
Responses API, claude-code Anthropic's Messages API, gemini-cli Gemini's), never the provider
prefix: the gateway forwards ``/v1/responses`` to ``TBFLOW_OPENAI_BASE_URL`` whatever the prefix
says, with ``MODEL`` (the prefix removed) as the model id. So ``--harness codex --model
anthropic/claude-x`` sent ``claude-x`` to the OpenAI endpoint. A prefix that names one of the
three API families (``openai``, ``anthropic``, ``gemini`` or ``google``) and is not the harness's
is refused before the job starts; any other prefix (``mock``, ``openrouter``, ``local``) is a label
recorded with the job, for an endpoint that serves ``MODEL`` on every API the job's harnesses speak.
"""

from __future__ import annotations

from collections.abc import Mapping

from tasks_lib.gateway.gateway_config import WIRE_FAMILY

#: provider prefixes that name an API family
PROVIDER_FAMILY = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "google": "gemini"}
_ENDPOINT = {"openai": "TBFLOW_OPENAI_BASE_URL", "anthropic": "TBFLOW_ANTHROPIC_BASE_URL",
             "gemini": "TBFLOW_GEMINI_BASE_URL"}


def provider_mismatch(model: str, wire_apis: Mapping[str, str]) -> str | None:
    """Why ``model`` cannot go to the harnesses (name → wire API) as asked, in one line; None: fine."""
    provider = model.split("/", 1)[0].lower()
    family = PROVIDER_FAMILY.get(provider)
    if family is None:
        return None
    wrong = sorted(h for h, api in wire_apis.items() if WIRE_FAMILY[api] != family)
    if not wrong:
        return None
    speaks = "; ".join(f"{h} speaks {wire_apis[h]} (sent to {_ENDPOINT[WIRE_FAMILY[wire_apis[h]]]})" for h in wrong)
    return (f"{model!r}: provider {provider!r} names the {family} API, but {speaks}; the harness's API decides "
            f"where requests go, the prefix does not. Run those harnesses with their own provider's model, or "
            f"give a neutral prefix (e.g. custom/{model.split('/', 1)[1]}) when that endpoint serves the model")
