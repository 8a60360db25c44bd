"""Model keys from Prefect Secret blocks: the job parameter ``key_secrets``.

Why: a deployment's model harness needs a provider key on the machine that runs its trials. The
worker's environment works but is per machine; the one Prefect-native alternative a team finds,
job variables (``job_variables: {env: {OPENAI_API_KEY: ...}}``) or a ``--param``, stores the key in
clear text in Prefect's database and shows it in the UI. A Secret block is stored encrypted by
the server and shown obfuscated; ``key_secrets`` names blocks, e.g.
``{"OPENAI_API_KEY": "openai-key"}``, and the run loads each value where it is needed (the job run
when it checks and starts its gateway, and every shard run on its own machine, which reads the
names from ``job.json``) and hands it to ``UpstreamConfig.from_env`` as if it were in the
environment (docs/deployments.md, "Model keys").

Only the *names* travel: they are flow-run parameters and in ``job.json``'s config, never in the
job's identity (``tasks_lib/records/job_identity.py``), so changing a key, or the block holding it,
changes no recorded job. The values are never a parameter, a log line, a record or an artifact;
the gateway's redaction (``UpstreamConfig.secrets``) covers them because they are its keys.
"""

from __future__ import annotations

import os
from typing import Annotated, Mapping

from pydantic import Field

from tasks_lib.errors import InputError
from tasks_lib.gateway.gateway_config import KEY_VARS

#: the environment variables a Secret block may stand in for: the model keys, nothing else
KEY_SECRET_VARS: tuple[str, ...] = tuple(KEY_VARS.values())
#: what Prefect accepts as a block document's name (lowercase letters, digits and dashes)
BLOCK_NAME_PATTERN = r"^[a-z0-9-]+$"

BlockName = Annotated[str, Field(pattern=BLOCK_NAME_PATTERN)]
KeySecrets = Annotated[dict[str, BlockName], Field(
    description=("Model keys from Prefect Secret blocks: a key variable (" + ", ".join(KEY_SECRET_VARS)
                 + ") -> the name of the Secret block holding it, e.g. {\"OPENAI_API_KEY\": \"openai-key\"}. "
                   "Loaded by the run on each machine, over that machine's environment; never a parameter "
                   "value, log line or record. Never pass a key itself as a parameter or job variable: "
                   "Prefect stores those in clear text."),
    json_schema_extra={"propertyNames": {"enum": list(KEY_SECRET_VARS)}})]


def check_key_variables(key_secrets: dict[str, str]) -> dict[str, str]:
    """Every name is one of the model key variables (a Secret block is not a general env channel)."""
    bad = sorted(set(key_secrets) - set(KEY_SECRET_VARS))
    if bad:
        raise ValueError(f"{', '.join(map(repr, bad))}: not a model key variable; use "
                         f"{', '.join(KEY_SECRET_VARS)}")
    return key_secrets


def load_keys(key_secrets: Mapping[str, str]) -> dict[str, str]:
    """Each named Secret block's value, by key variable, from the Prefect server of this run.

    A block that does not exist (or holds no text) refuses the run in one line naming the
    parameter and the block; the value itself is never part of a message.
    """
    if not key_secrets:
        return {}
    from prefect.blocks.system import Secret  # Prefect only when keys come from blocks

    out: dict[str, str] = {}
    for var, name in key_secrets.items():
        try:
            value = Secret.load(name).get()  # type: ignore[union-attr]  # sync here: a Secret, not a coroutine
        except ValueError:  # Prefect's "Unable to find block document named ..."
            raise InputError("--key-secrets", f"{var}: no Secret block named {name!r} on this Prefect server "
                                              f"(create it first: docs/deployments.md, \"Model keys\")") from None
        except Exception as exc:  # noqa: BLE001 - the server unreachable, a block of another shape
            raise InputError("--key-secrets", f"{var}: could not load Secret block {name!r}: "
                                              f"{type(exc).__name__}") from None
        if not isinstance(value, str) or not value.strip():
            raise InputError("--key-secrets", f"{var}: Secret block {name!r} holds no key (a non-empty string)")
        out[var] = value.strip()
    return out


def environment_with_keys(key_secrets: Mapping[str, str]) -> dict[str, str]:
    """This process's environment with the blocks' keys over it (a block wins over a variable)."""
    return {**os.environ, **load_keys(key_secrets)}
