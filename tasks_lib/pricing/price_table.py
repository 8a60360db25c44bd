"""The model price table, in LiteLLM's ``model_prices_and_context_window.json`` format.

Why that format: it is the ecosystem's usual price source (Harbor's and Inspect's costs come from
it), so a user can hand tbflow the file they already keep. A table maps a model name to an entry
with ``input_cost_per_token``, ``output_cost_per_token`` and, optionally,
``cache_read_input_token_cost``, ``cache_creation_input_token_cost`` and
``cache_creation_input_token_cost_above_1hr`` (USD per token), and prompt-size tiers
(``input_cost_per_token_above_200k_tokens`` and the like, ``ModelPrice``); other keys are ignored.
JSON, or TOML with one table per model (``["gpt-5"]``).

``default_prices.json`` is a small pinned copy of LiteLLM 1.110.2's entries for common models:
nothing is fetched at run time. A user table (``tbflow run --prices FILE``) is laid over it, its
entries winning. A model in neither has no price: its cost is None (unknown), never 0.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from tasks_lib.errors import InputError

DEFAULT_TABLE = Path(__file__).with_name("default_prices.json")
#: LiteLLM's file starts with a documentation entry of this name
_SAMPLE = "sample_spec"


#: the per-token prices a tier may raise, in LiteLLM's names
TIERED = ("input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost",
          "cache_creation_input_token_cost", "cache_creation_input_token_cost_above_1hr")
_TIER_KEY = re.compile(r"^(?P<base>[a-z_0-9]+?)_above_(?P<k>[0-9]+)k_tokens$")


class ModelPrice(BaseModel):
    """USD per token; a missing input or output price means the model is not priced.

    LiteLLM's tiers are kept: ``<price>_above_<N>k_tokens`` (the price of every token of a call
    whose whole prompt, cache reads and writes included, is over N thousand tokens) and
    ``cache_creation_input_token_cost_above_1hr`` (a cache write kept an hour, not five minutes).
    """

    model_config = ConfigDict(extra="ignore")

    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    cache_read_input_token_cost: float | None = None
    cache_creation_input_token_cost: float | None = None
    cache_creation_input_token_cost_above_1hr: float | None = None
    #: prompt-size tiers: threshold in tokens → the prices (of ``TIERED``) that change above it
    tiers: dict[int, dict[str, float]] = {}

    @model_validator(mode="before")
    @classmethod
    def _collect_tiers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        tiers: dict[int, dict[str, Any]] = {int(k): dict(v) for k, v in (data.get("tiers") or {}).items()}
        for key, value in data.items():
            match = _TIER_KEY.match(key)
            if match and match["base"] in TIERED:
                tiers.setdefault(int(match["k"]) * 1000, {})[match["base"]] = value
        return {**data, "tiers": tiers}

    def at(self, prompt_tokens: int) -> "ModelPrice":
        """The prices of a call whose whole prompt is ``prompt_tokens``: the highest tier it is
        strictly over replaces the base prices it names (LiteLLM's and the providers' rule)."""
        over = [t for t in self.tiers if prompt_tokens > t]
        if not over:
            return self
        return self.model_copy(update=self.tiers[max(over)])


class PriceTable(BaseModel):
    prices: dict[str, ModelPrice]

    def lookup(self, model: str | None) -> ModelPrice | None:
        """The entry for ``model``: its exact name, else without a ``provider/`` prefix, else the
        name with one of the table's (``gemini/gemini-2.5-pro``), case-insensitively."""
        if not model:
            return None
        names = {name.lower(): price for name, price in self.prices.items()}
        bare = model.lower().rsplit("/", 1)[-1]
        for name in (model.lower(), bare):
            if name in names:
                return names[name]
        return next((p for n, p in names.items() if n.rsplit("/", 1)[-1] == bare), None)

    def over(self, base: "PriceTable") -> "PriceTable":
        """This table's entries laid over ``base``'s: ours win."""
        return PriceTable(prices={**base.prices, **self.prices})


def parse_price_table(text: str, source: str, toml: bool = False) -> PriceTable:
    """A price table from its text; ``InputError`` naming ``source`` and the entry that is wrong."""
    try:
        raw = tomllib.loads(text) if toml else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise InputError(source, f"not a valid {'TOML' if toml else 'JSON'} price table: {exc}") from None
    if not isinstance(raw, dict):
        raise InputError(source, f"a price table maps model names to entries; found {type(raw).__name__}")
    prices = {}
    for name, entry in raw.items():
        if name == _SAMPLE:
            continue
        try:
            prices[name] = ModelPrice.model_validate(entry)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise InputError(source, f"model {name!r}{': ' + where if where else ''}: {problem['msg']}") from None
    return PriceTable(prices=prices)


def load_price_table(path: Path) -> PriceTable:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--prices {path}", f"cannot read the price table: {exc.strerror or exc}") from None
    return parse_price_table(text, str(path), toml=path.suffix.lower() == ".toml")


def default_price_table() -> PriceTable:
    return parse_price_table(DEFAULT_TABLE.read_text(encoding="utf-8"), str(DEFAULT_TABLE))


def call_cost(price: ModelPrice | None, prompt: int, completion: int, cache_read: int | None,
              cache_write: int | None, prompt_includes_cache: bool, cache_write_1h: int | None = None) -> float | None:
    """USD of one model call, None when the model is not priced.

    OpenAI and Gemini count cached tokens inside the prompt; Anthropic's ``input_tokens`` leaves
    cache reads and writes out, so they are added (and count towards the prompt's size for its
    tier). Of the cache writes, ``cache_write_1h`` were kept an hour and cost that price. Cache
    tokens without a cache price cost the input price.
    """
    if price is None or price.input_cost_per_token is None or price.output_cost_per_token is None:
        return None
    read, write = cache_read or 0, cache_write or 0
    hour = min(cache_write_1h or 0, write)
    whole = prompt if prompt_includes_cache else prompt + read + write
    price = price.at(whole)
    inp, out = price.input_cost_per_token or 0.0, price.output_cost_per_token or 0.0
    uncached = max(prompt - read, 0) if prompt_includes_cache else prompt
    read_price = _or(price.cache_read_input_token_cost, inp)
    write_price = _or(price.cache_creation_input_token_cost, inp)
    hour_price = _or(price.cache_creation_input_token_cost_above_1hr, write_price)
    total = uncached * inp + completion * out + read * read_price
    if not prompt_includes_cache:
        total += (write - hour) * write_price + hour * hour_price
    return total


def _or(value: float | None, default: float) -> float:
    return value if value is not None else default
