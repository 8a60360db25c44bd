"""Reading the verifier's reward files, strictly.

``float()`` alone accepts ``nan``, ``inf`` and ``1e400``, and prefix checks accept ``"10"``;
public runners have scored all of those. A reward here must be one finite number in [0, 1]
(``reward.txt``) or a flat JSON object of such numbers (``reward.json``, whose ``reward`` key —
or its only key — is the trial's reward). Anything else is "no reward", never 0.

Both files come from the container, so reading them is bounded (``REWARD_MAX_BYTES``, and
``tasks_lib.safe_json`` for reward.json's nesting): a 10 KB ``[[[[…`` once raised
``RecursionError`` out of here and the trial ended as a tbflow bug instead of "no reward".
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel

from tasks_lib.safe_json import JsonRefused, loads_bounded

#: a reward file longer than this is no reward (the judge reads up to the same cap in the container)
REWARD_MAX_BYTES = 65536


class RewardReading(BaseModel):
    reward: float | None = None
    rewards: dict[str, float] = {}
    problem: str | None = None


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} is not a number: {value!r}")
    f = float(value)
    if not math.isfinite(f) or not 0.0 <= f <= 1.0:
        raise ValueError(f"{what} must be a finite number in [0, 1], got {value!r}")
    return f


def parse_reward_txt(text: str) -> float:
    s = text.strip()
    if not s:
        raise ValueError("reward.txt is empty")
    try:
        value = float(s)
    except ValueError:
        raise ValueError(f"reward.txt does not hold one number: {s[:80]!r}") from None
    return _number(value, "reward.txt")


def parse_reward_json(text: str) -> tuple[float, dict[str, float]]:
    if not text.strip():
        raise ValueError("reward.json is empty")
    try:
        data = loads_bounded(text, max_chars=REWARD_MAX_BYTES)
    except JsonRefused as exc:
        raise ValueError(f"reward.json is not a usable JSON document: {exc}") from None
    except ValueError as exc:  # json.JSONDecodeError, or an integer of thousands of digits
        raise ValueError(f"reward.json is not JSON: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise ValueError("reward.json must be a non-empty object of numbers")
    rewards = {str(k): _number(v, f"reward.json[{k!r}]") for k, v in data.items()}
    if "reward" in rewards:
        return rewards["reward"], rewards
    if len(rewards) == 1:
        return next(iter(rewards.values())), rewards
    raise ValueError(f"reward.json has several keys and no 'reward': {sorted(rewards)}")


def read_rewards(verifier_dir: Path) -> RewardReading:
    """The reward from ``reward.txt`` and/or ``reward.json`` in ``verifier_dir``."""
    txt_path, json_path = verifier_dir / "reward.txt", verifier_dir / "reward.json"
    return read_reward_bytes(_head(txt_path), _head(json_path))


def _head(path: Path) -> bytes | None:
    """The file's first ``REWARD_MAX_BYTES`` + 1 bytes (enough to tell it is too long), or None."""
    if not path.is_file():
        return None
    with path.open("rb") as fh:
        return fh.read(REWARD_MAX_BYTES + 1)


def read_reward_bytes(txt_bytes: bytes | None, json_bytes: bytes | None) -> RewardReading:
    """The reward from the bytes of ``reward.txt`` and/or ``reward.json`` (None = no such file)."""
    if txt_bytes is None and json_bytes is None:
        return RewardReading(problem="test.sh wrote no reward (neither reward.txt nor reward.json)")
    for name, data in (("reward.txt", txt_bytes), ("reward.json", json_bytes)):
        if data is not None and len(data) > REWARD_MAX_BYTES:
            return RewardReading(problem=f"{name} is larger than {REWARD_MAX_BYTES} bytes")
    try:
        txt = parse_reward_txt(txt_bytes.decode("utf-8", errors="replace")) if txt_bytes is not None else None
        js = parse_reward_json(json_bytes.decode("utf-8", errors="replace")) if json_bytes is not None else None
    except ValueError as exc:
        return RewardReading(problem=str(exc))
    if txt is not None and js is not None and not math.isclose(txt, js[0], abs_tol=1e-9):
        return RewardReading(problem=f"reward.txt ({txt:g}) and reward.json ({js[0]:g}) disagree")
    if js is not None:
        return RewardReading(reward=js[0], rewards=js[1])
    return RewardReading(reward=txt, rewards={"reward": txt} if txt is not None else {})
