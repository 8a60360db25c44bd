"""Options with an optional value (``--flag``, ``--flag=V``, ``--flag V``), which Typer cannot declare.

A command built with ``optional_value_command(flag, default, accepts)`` rewrites a bare ``flag``
to ``flag=default`` before click parses the arguments, unless the next word is itself a value the
option accepts.
"""

from __future__ import annotations

from typing import Callable

from typer.core import TyperCommand


def normalize_optional_value(args: list[str], flag: str, default: str, accepts: Callable[[str], bool]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        if arg == flag:
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is not None and accepts(nxt):
                out.append(f"{flag}={nxt}")
                i += 2
                continue
            out.append(f"{flag}={default}")
        else:
            out.append(arg)
        i += 1
    return out


def optional_value_command(flag: str, default: str, accepts: Callable[[str], bool],
                           base: type[TyperCommand] = TyperCommand) -> type[TyperCommand]:
    class _Command(base):  # type: ignore[valid-type,misc]
        def parse_args(self, ctx, args):  # noqa: ANN001, ANN201 (click's signature)
            return super().parse_args(ctx, normalize_optional_value(list(args), flag, default, accepts))

    return _Command
