"""The declarative harness file (``--harness ./agents/my-agent.toml``) as a pydantic model.

Why a file and not a class: most agent CLIs differ only in what the built-in adapters spell out
in Python (which package, which argv, which env, where the log is, how usage is read), so adding
one should need no Python (docs/write-a-harness.md, "Declarative harness files"). The file is
checked completely before any trial starts: unknown tables and keys, a missing field, a version
that is not exact, a pin of the wrong form, an unknown placeholder or a bad regex are each an
``InputError`` that names the file and the field (``agents/x.toml: [command] argv: Field
required``), so ``tbflow run`` exits 2 instead of running a job of invalid trials.

Placeholders are ``{name}`` with ``name`` one of ``PLACEHOLDERS``; nothing else in a string is
touched (a JSON file's own braces stay as they are). The per-trial token may appear only in
``[command] env``: it is never written to a file nor put on a command line (the rule of every
built-in CLI, harnesses/cli/cli_harness.py).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harnesses.bundles.npm_bundle import _SRI_SHA512, VersionPinError, check_exact_version
from harnesses.cli import usage_parsers
from tasks_lib.trial.harness_api import WireApi

#: what a template may name: the instruction, the trial's model access, and the harness's own paths
PLACEHOLDERS = {
    "instruction": "the task's instruction",
    "model": "the model id (without the provider prefix)",
    "provider": "the provider prefix of --model",
    "base_url": "the gateway's in-container URL, no path (add /v1 for OpenAI clients)",
    "token": "the per-trial token (only in [command] env)",
    "bundle": "where the bundle is in the container (/opt/tbflow/<name>)",
    "state": "a harness-owned writable dir (/tmp/tbflow-<name>) for config and state",
}
MODEL_ONLY = {"model", "provider", "base_url", "token"}
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: tbflow's usage parsers a file may name (harnesses/cli/usage_parsers.py), with their error readers
PARSERS = {
    "codex": (usage_parsers.codex_usage, usage_parsers.codex_error),
    "opencode": (usage_parsers.opencode_usage, usage_parsers.opencode_error),
    "pi": (usage_parsers.pi_usage, usage_parsers.pi_error),
    "claude-code": (usage_parsers.claude_usage, usage_parsers.claude_error),
}
_LOG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIELD_PATH = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HarnessTable(_Strict):
    name: str
    version: str
    kind: Literal["model", "reference"] = "model"
    wire_api: WireApi | None = None

    @field_validator("name")
    @classmethod
    def _key(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("letters, digits, '_' or '-', max 64, starting with a letter or digit (it keys trials)")
        return v

    @field_validator("version")
    @classmethod
    def _exact(cls, v: str) -> str:
        try:
            return check_exact_version("declared", v)
        except VersionPinError:
            raise ValueError(f"{v!r} is not an exact version (want e.g. 1.2.3)") from None


class BundleTable(_Strict):
    """Exactly one source: an npm package (``npm = "pkg@1.2.3"`` + its sha512 ``integrity``), or a
    local ``dir``, ``tarball`` or ``wheel`` (relative to the file) with its ``sha256``."""

    npm: str | None = None
    integrity: str | None = None
    dir: str | None = None
    tarball: str | None = None
    wheel: str | None = None
    sha256: str | None = None
    #: add tbflow's pinned Node runtime at ``{bundle}/node/bin/node`` (for Node programs)
    node: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> "BundleTable":
        given = [k for k in ("npm", "dir", "tarball", "wheel") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of npm, dir, tarball, wheel (got {', '.join(given) or 'none'})")
        if self.npm is not None:
            name, _, version = self.npm.rpartition("@")
            if not name or name.startswith("@") and "/" not in name:
                raise ValueError(f"npm: {self.npm!r} is not 'package@version'")
            try:
                check_exact_version("declared", version)
            except VersionPinError:
                raise ValueError(f"npm: {version!r} is not an exact version (want e.g. pkg@1.2.3)") from None
            if self.integrity is None or not _SRI_SHA512.fullmatch(self.integrity):
                raise ValueError("integrity: an npm bundle needs its sha512 pin, 'sha512-...' "
                                 "(npm view PKG@VERSION dist.integrity)")
            if self.sha256 is not None:
                raise ValueError("sha256: an npm bundle is pinned by integrity, not sha256")
        else:
            if self.sha256 is None or not _SHA256.match(self.sha256):
                raise ValueError(f"sha256: a {given[0]} bundle needs its sha256 pin (64 lower-case hex digits)")
            if self.integrity is not None:
                raise ValueError(f"integrity: only an npm bundle has one; a {given[0]} is pinned by sha256")
        return self

    @property
    def npm_name_version(self) -> tuple[str, str]:
        name, _, version = (self.npm or "").rpartition("@")
        return name, version


class CommandTable(_Strict):
    argv: Annotated[list[str], Field(min_length=1)]
    env: dict[str, str] = Field(default_factory=dict)
    #: files written (by an ``sh -c`` prelude) before the command runs, path → content
    files: dict[str, str] = Field(default_factory=dict)
    user: str | None = None

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [k for k in v if not _ENV_NAME.match(k)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not an environment variable name")
        return v

    @field_validator("files")
    @classmethod
    def _absolute(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [k for k in v if not k.startswith(("/", "{state}", "{bundle}"))]
        if bad:
            raise ValueError(f"{bad[0]!r} must be absolute (e.g. under {{state}})")
        return v


class LogsTable(_Strict):
    """File names in ``/logs/agent/``: the command's stdout and stderr, and the event log usage is
    read from (default: stdout; another file the agent writes there, e.g. a telemetry file)."""

    stdout: str
    stderr: str | None = None
    events: str | None = None
    #: a regex searched in the events log, stdout and stderr; the last match (group 1 when the
    #: pattern has one) is the error line of an invalid trial
    error_pattern: str | None = None

    @field_validator("stdout", "stderr", "events")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None and not _LOG_NAME.match(v):
            raise ValueError(f"{v!r} must be a plain file name in /logs/agent (letters, digits, '.', '_', '-')")
        return v

    @field_validator("error_pattern")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return v


FieldPaths = list[str]


class UsageTable(_Strict):
    """Either ``parser`` (one of tbflow's, ``PARSERS``) or a field mapping over the JSON lines of
    the events log: the lines whose fields equal ``match``, their ``input``/``output`` (dotted
    paths, each summed; a list adds several), ``cost``, the last such line (``combine = "last"``:
    run totals) or all of them summed (``"sum"``: per-turn usage), and ``error`` (a dotted path
    whose text, in the last line that has it, is the error line)."""

    parser: str | None = None
    match: dict[str, str | int | bool] = Field(default_factory=dict)
    input: FieldPaths | None = None
    output: FieldPaths | None = None
    cost: str | None = None
    combine: Literal["last", "sum"] = "last"
    error: str | None = None

    @field_validator("input", "output", mode="before")
    @classmethod
    def _listed(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _parser_or_mapping(self) -> "UsageTable":
        mapping = self.input is not None or self.output is not None
        if self.parser is not None:
            if self.parser not in PARSERS:
                raise ValueError(f"parser: {self.parser!r} is not one of {', '.join(sorted(PARSERS))}")
            if mapping or self.match or self.cost or self.error:
                raise ValueError("give parser or a field mapping (match, input, output, ...), not both")
        elif self.input is None or self.output is None:
            raise ValueError("give parser, or both input and output (dotted field paths)")
        for path in [*(self.input or []), *(self.output or []), *filter(None, [self.cost, self.error]), *self.match]:
            if not _FIELD_PATH.match(path):
                raise ValueError(f"{path!r} is not a dotted field path (e.g. usage.input_tokens)")
        return self


class HarnessFile(_Strict):
    harness: HarnessTable
    bundle: BundleTable
    command: CommandTable
    logs: LogsTable
    usage: UsageTable | None = None
    #: exit codes that mean a deliberate stop (a budget, a goal left incomplete): recorded as such,
    #: never a verdict of their own (a trial that reached the model is scored whatever it exits with)
    exit_codes: dict[int, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _model_fields(self) -> "HarnessFile":
        if self.harness.kind == "model" and self.harness.wire_api is None:
            raise ValueError("[harness] wire_api: a model harness names its wire API "
                             "(openai-responses, openai-chat, anthropic-messages, gemini-generate-content)")
        return self


def placeholder_problem(value: str, kind: str, where: str) -> str | None:
    """Why ``value`` (at ``where``) names a placeholder it may not, else None."""
    for name in PLACEHOLDER.findall(value):
        if name not in PLACEHOLDERS:
            return f"{where}: unknown placeholder {{{name}}} (known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})"
        if kind == "reference" and name in MODEL_ONLY:
            return f"{where}: {{{name}}} is only for model harnesses (kind = \"model\")"
        if name == "token" and not where.startswith("[command] env"):
            return f"{where}: {{token}} may appear only in [command] env (never in a file or on the command line)"
    return None


def check_placeholders(spec: HarnessFile) -> str | None:
    """The first misuse of a placeholder in the file, named by its field, else None."""
    kind, cmd = spec.harness.kind, spec.command
    fields = [(f"[command] argv[{i}]", v) for i, v in enumerate(cmd.argv)]
    fields += [(f"[command] env.{k}", v) for k, v in cmd.env.items()]
    fields += [(f"[command] files key {k!r}", k) for k in cmd.files]
    fields += [(f"[command] files.{k!r}", v) for k, v in cmd.files.items()]
    for where, value in fields:
        problem = placeholder_problem(value, kind, where)
        if problem:
            return problem
    return None


def fill(value: str, values: dict[str, str]) -> str:
    """``value`` with each ``{name}`` replaced (names were checked when the file was loaded)."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], value)
