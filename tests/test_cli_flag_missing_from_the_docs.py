"""Every flag that `--help` shows, of every tbflow command and subcommand, appears in README.md or
docs/*.md, and every command is named there as `tbflow COMMAND` (issue 31: a flag users can only
find by reading --help is undocumented).

The commands are those `tbflow` itself registers: a child process runs flows.cli.main.main() with
Typer's app call swapped for a dump of the Click command tree (Typer vendors its Click:
parameters are told apart by ``param_type_name``), so a command added to main() later
is covered without changing this test."""

import json
import os
import re
import subprocess
import sys

from doc_pages import ROOT, documented_text

DUMP = r"""
import json, sys
import typer, typer.main

def dump(self, *args, **kwargs):
    out = {}
    def walk(cmd, path):
        flags = [o for p in cmd.params if p.param_type_name == "option" and not getattr(p, "hidden", False)
                 for o in (*p.opts, *p.secondary_opts) if o.startswith("--") and o != "--help"]
        out[" ".join(path)] = sorted(flags)
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            if not getattr(sub, "hidden", False):
                walk(sub, [*path, name])
    walk(typer.main.get_command(self), ["tbflow"])
    print("FLAGS " + json.dumps(out), flush=True)
    raise SystemExit(0)

typer.Typer.__call__ = dump
sys.argv = ["tbflow"]
from flows.cli.main import main
main()
"""


def cli_flags() -> dict[str, list[str]]:
    env = dict(os.environ)
    res = subprocess.run([sys.executable, "-c", DUMP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    line = next((x for x in res.stdout.splitlines() if x.startswith("FLAGS ")), None)
    assert line, f"no command tree (exit {res.returncode}):\n{res.stderr[-3000:]}"
    return json.loads(line.removeprefix("FLAGS "))


def test_every_command_and_flag_of_help_is_in_the_docs():
    tree = cli_flags()
    assert {"tbflow run", "tbflow resume", "tbflow report", "tbflow datasets list"} <= set(tree), sorted(tree)
    assert "--fail-on-invalid" in tree["tbflow run"]
    docs = documented_text()
    missing = []
    for command, flags in tree.items():
        if command != "tbflow" and not re.search(rf"(?<![\w-]){re.escape(command)}(?![\w-])", docs):
            missing.append(command)
        missing += [f"{command} {flag}" for flag in flags
                    if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", docs)]
    assert missing == [], f"in --help but not in README.md or docs/*.md: {missing}"
