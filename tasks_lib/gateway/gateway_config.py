"""Where the model gateway forwards, with which key: ``UpstreamConfig``, built from the environment.

Why a separate module: this is the one object that holds the real provider keys, and the one a
job's configuration step builds and checks *before* any trial starts (``require``), so that a
missing key fails the job with an actionable message instead of turning every trial into a
401. Keys are ``SecretStr``: they never show in a repr, a log line or a validation error.

Environment (``UpstreamConfig.from_env``). An API family is configured when its key or its base
URL variable is set (a local OpenAI-compatible server may need no key):

* ``TBFLOW_OPENAI_BASE_URL``: OpenAI-compatible base *including* ``/v1`` (default
  ``https://api.openai.com/v1``, the provider's public API); ``OPENAI_API_KEY`` is sent as
  ``Authorization: Bearer``.
* ``TBFLOW_ANTHROPIC_BASE_URL``: Anthropic base *without* ``/v1`` (default
  ``https://api.anthropic.com``); ``ANTHROPIC_API_KEY`` is sent as ``x-api-key``.
* ``TBFLOW_GEMINI_BASE_URL``: Gemini API root, the part before ``/v1beta`` (default
  ``https://generativelanguage.googleapis.com``); ``GEMINI_API_KEY`` is sent as ``x-goog-api-key``.
* ``TBFLOW_GATEWAY_READ_TIMEOUT_SEC``: seconds without upstream bytes before a 504 (default 600).

Each variable follows its provider's convention for base URLs (OpenAI's include ``/v1``,
Anthropic's and Google's do not); internally OpenAI and Anthropic become "the URL ``/v1`` maps
to", Gemini stays the root its versioned paths (``/v1beta/models/...``) hang off.
"""

from __future__ import annotations

import os
import re
from typing import Literal, Mapping

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator

from tasks_lib.errors import InputError

Family = Literal["openai", "anthropic", "gemini"]
WIRE_FAMILY: dict[str, Family] = {"openai-responses": "openai", "openai-chat": "openai",
                                  "anthropic-messages": "anthropic", "gemini-generate-content": "gemini"}
#: the key variable of each family, for the message of a missing one
KEY_VARS: dict[Family, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}


class GatewayConfigError(InputError):
    """The upstream configuration cannot serve what was asked (e.g. no key for the harness's API)."""


class UpstreamEndpoint(BaseModel):
    """One provider: ``base_url`` ends where ``/v1`` ends (request ``/v1/x`` goes to ``base_url + /x``)."""

    base_url: str
    api_key: SecretStr | None = None
    auth: Literal["bearer", "x-api-key", "x-goog-api-key"]

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not re.match(r"^https?://[^/\s]+", v):
            raise ValueError(f"not an http(s) URL: {v!r}")
        return v.rstrip("/")

    def auth_header(self) -> tuple[str, str] | None:
        if self.api_key is None:
            return None
        key = self.api_key.get_secret_value()
        return ("Authorization", f"Bearer {key}") if self.auth == "bearer" else (self.auth, key)


class UpstreamConfig(BaseModel):
    """Where the gateway forwards each API family, with which key, and its timeouts."""

    openai: UpstreamEndpoint | None = None
    anthropic: UpstreamEndpoint | None = None
    gemini: UpstreamEndpoint | None = None
    read_timeout_sec: float = Field(600.0, gt=0)
    connect_timeout_sec: float = Field(30.0, gt=0)
    trust_env_proxy: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "UpstreamConfig":
        env = os.environ if env is None else env

        def endpoint(url_var: str, default: str, key_var: str, auth: str, suffix: str) -> UpstreamEndpoint | None:
            if not (env.get(url_var) or env.get(key_var)):
                return None
            base = (env.get(url_var) or default).rstrip("/")
            if suffix and base.endswith(suffix):  # a pasted OpenAI-style base: do not double the /v1
                base = base[: -len(suffix)]
            try:
                return UpstreamEndpoint.model_validate(
                    {"base_url": base + suffix, "api_key": env.get(key_var) or None, "auth": auth})
            except ValueError as exc:
                raise GatewayConfigError(url_var, str(exc).splitlines()[-1].strip()) from None
        timeout = env.get("TBFLOW_GATEWAY_READ_TIMEOUT_SEC")
        try:
            extra = {"read_timeout_sec": float(timeout)} if timeout else {}
        except ValueError:
            raise GatewayConfigError("TBFLOW_GATEWAY_READ_TIMEOUT_SEC", f"not a number: {timeout!r}") from None
        openai = endpoint("TBFLOW_OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY", "bearer", "")
        anthropic = endpoint("TBFLOW_ANTHROPIC_BASE_URL", "https://api.anthropic.com", "ANTHROPIC_API_KEY",
                             "x-api-key", "/v1")
        gemini = endpoint("TBFLOW_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com", "GEMINI_API_KEY",
                          "x-goog-api-key", "")
        try:
            return cls.model_validate({"openai": openai, "anthropic": anthropic, "gemini": gemini, **extra})
        except ValidationError:
            raise GatewayConfigError("TBFLOW_GATEWAY_READ_TIMEOUT_SEC", "must be a positive number of seconds") from None

    def endpoint(self, family: Family) -> UpstreamEndpoint | None:
        return {"openai": self.openai, "anthropic": self.anthropic, "gemini": self.gemini}[family]

    def require(self, wire_api: str) -> UpstreamEndpoint:
        """Check before a trial starts that its harness's wire API can be served."""
        family = WIRE_FAMILY.get(wire_api)
        if family is None:
            raise GatewayConfigError("harness wire_api", f"unknown wire API {wire_api!r}")
        found = self.endpoint(family)
        if found is None:
            var = KEY_VARS[family]
            raise GatewayConfigError(var, f"no {family} upstream for wire API {wire_api}: set {var} "
                                          f"(and TBFLOW_{family.upper()}_BASE_URL for a non-default endpoint)")
        return found

    def secrets(self) -> list[str]:
        endpoints = [self.endpoint(family) for family in KEY_VARS]
        return [e.api_key.get_secret_value() for e in endpoints
                if e is not None and e.api_key is not None and e.api_key.get_secret_value()]
