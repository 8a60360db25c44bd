"""`prefect deploy --all`, as the docs tell users, also turns on the nightly job (03:00 UTC) and
the daily retention job that deletes nightly-* job directories (issue 31: it did so without a
word). docs/deployments.md now says so and gives a line that deploys only the job deployment;
this runs that line as written against a real server, and `--all` after it, and checks which
schedules each leaves active."""

import re
import subprocess

from doc_pages import DOCS, ROOT
from prefect_stack import Api, start_server, stop_session

PAGE = DOCS / "deployments.md"


def documented_deploy(flag: str) -> str:
    """The `prefect --no-prompt deploy` line of docs/deployments.md that uses ``flag``."""
    lines = [x.strip() for x in PAGE.read_text().splitlines()
             if x.startswith("prefect --no-prompt deploy") and flag in x]
    assert lines, f"docs/deployments.md shows no `prefect --no-prompt deploy ... {flag}` line"
    return lines[0]


def active_schedules(api: Api) -> dict[str, bool]:
    """deployment name -> whether it has an active schedule."""
    return {d["name"]: any(s.get("active") for s in d.get("schedules") or []) for d in api.post("/deployments/filter")}


def test_only_the_named_deployment_is_created_and_all_turns_on_the_nightly_pair(tmp_path):
    only_job, everything = documented_deploy("--name examples-oracle"), documented_deploy("--all")
    env, server = start_server(tmp_path)
    try:
        api = Api(env["PREFECT_API_URL"])
        sh = lambda cmd: subprocess.run(["bash", "-c", cmd], env=env, cwd=ROOT, capture_output=True,  # noqa: E731
                                        text=True, timeout=300)
        res = sh("prefect work-pool create tbflow --type process --overwrite")
        assert res.returncode == 0, res.stdout + res.stderr
        res = sh(only_job)
        assert res.returncode == 0, res.stdout + res.stderr
        assert active_schedules(api) == {"examples-oracle": False}

        res = sh(everything)
        assert res.returncode == 0, res.stdout + res.stderr
        after = active_schedules(api)
        assert {name for name, active in after.items() if active} == {"nightly", "nightly-retention"}, after
        text = re.sub(r"\s+", " ", PAGE.read_text())
        assert "**deletes** the finished `nightly-*` job directories" in text
    finally:
        stop_session(server)
