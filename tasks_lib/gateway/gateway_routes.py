"""Which requests the gateway forwards, and with which token: the request line and headers, read.

Why apart from ``gateway_http``: these are pure functions over what arrives before the body (the
path, the query, the headers), which is all the gateway looks at before it reads a byte of the
body: the token, the API family and the model route.
"""

from __future__ import annotations

import re

from starlette.datastructures import Headers

from tasks_lib.gateway.gateway_config import Family

POST_ROUTES = re.compile(r"/(responses|responses/compact|chat/completions|messages|messages/count_tokens)")
GET_ROUTES = re.compile(r"/models(/[A-Za-z0-9._:@-]+)?")
#: the Gemini API's model calls, matched on the whole path (its version is part of the route)
GEMINI_ROUTES = re.compile(r"/v1(beta|alpha)?/models/[A-Za-z0-9._@-]+:(generateContent|streamGenerateContent|countTokens)")


def family_and_route(path: str, headers: Headers) -> tuple[Family, str]:
    """The API family (upstream, error shape) and the route forwarded under the upstream's base.

    OpenAI and Anthropic routes are what follows ``/v1``; ``/v1/models`` goes by the auth header
    style. A Gemini route keeps its whole path: its API version (``/v1beta``) is part of it.
    """
    if path.startswith(("/v1beta/", "/v1alpha/")) or (path.startswith("/v1/") and ":" in path):
        return "gemini", path
    rest = path[3:] if path.startswith("/v1/") else ""
    anthropic = rest.startswith("/messages") or ("x-api-key" in headers and "authorization" not in headers)
    return ("anthropic" if anthropic else "openai"), rest


def without_key(query: str) -> tuple[str, str | None]:
    """The query without Google's ``key=`` parameter (a token there never goes upstream), and that key."""
    kept, key = [], None
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        if name == "key":
            key = value.strip() or key
        else:
            kept.append(part)
    return "&".join(kept), key


def presented_tokens(headers: Headers) -> list[str]:
    found = []
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        found.append(auth[7:].strip())
    for name in ("x-api-key", "x-goog-api-key"):
        if headers.get(name):
            found.append(headers[name].strip())
    return found


def routed(method: str, family: Family, rest: str) -> bool:
    """Whether ``method`` on ``rest`` is a model route the gateway forwards (else 404)."""
    routes = POST_ROUTES if method == "POST" else GET_ROUTES if method == "GET" else None
    if family == "gemini":
        routes = GEMINI_ROUTES if method == "POST" else None
    return bool(rest) and routes is not None and routes.fullmatch(rest) is not None
