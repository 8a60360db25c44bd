#!/usr/bin/env bash
# Print, as a JSON list, every key path of Harbor's own task.toml schema (harbor 0.26.0's
# TaskConfig, walked through its pydantic models): "a.b" for tables, "a[].b" for arrays of
# tables. tests/test_every_harbor_task_key_is_honoured_or_refused.py checks tbflow's key table
# (tasks_lib/task/key_rules.py) against it, so a Harbor release with a new key fails a test.
# Runs in the venv of scripts/harbor-venv.sh (Python 3.12, made once, pinned).
# Exit status: 0; 3 no Python 3.12 here; 4 the venv's install failed.
set -euo pipefail

venv="$("$(dirname "${BASH_SOURCE[0]}")/harbor-venv.sh")"  # exits 3 (no Python 3.12) or 4 with its reason

exec "$venv/bin/python" - <<'PY'
import json
import types
import typing

from pydantic import BaseModel

from harbor.models.task.config import TaskConfig


def models_in(annotation):
    """(model, is_list) for each pydantic model an annotation holds (Optional, unions, lists)."""
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, False)]
    if origin in (list, tuple, set):
        return [(m, True) for m, _ in sum((models_in(a) for a in typing.get_args(annotation)), [])]
    if origin in (typing.Union, types.UnionType):
        return sum((models_in(a) for a in typing.get_args(annotation)), [])
    return []


def walk(model, prefix, out, seen):
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        out.add(path)
        for sub, is_list in models_in(field.annotation):
            key = (sub, path)
            if key in seen:
                continue
            seen.add(key)
            walk(sub, f"{path}[]." if is_list else f"{path}.", out, seen)


paths = set()
walk(TaskConfig, "", paths, set())
print(json.dumps(sorted(paths), indent=1))
PY
