"""The ``--harness`` help text, made from the registry when help is shown.

Why not a literal: a hand-kept list went stale (``tbflow run --help`` named 6 harnesses while 9
were built in, and not the ``.toml`` form). Why at help time: listing the built-ins imports every
adapter (a quarter second), which no other command should pay at start-up.
"""

from __future__ import annotations

from typer.core import TyperCommand

#: replaced by ``harness_help()`` when ``--help`` is formatted
PLACEHOLDER = "Harness to run (repeatable); see `tbflow harnesses`."


def harness_help() -> str:
    from harnesses.registry import OTHER_FORMS, builtin_names

    return (f"Harness to run (repeatable): {', '.join(builtin_names())}; an installed plug-in "
            f"(tbflow harnesses); or {OTHER_FORMS}.")


class HarnessHelpCommand(TyperCommand):
    """A command whose ``--harness`` option's help lists the harnesses the registry knows."""

    def format_help(self, ctx, formatter):  # noqa: ANN001, ANN201 (click's signature)
        for param in self.params:
            if getattr(param, "help", None) == PLACEHOLDER:
                param.help = harness_help()
        return super().format_help(ctx, formatter)
