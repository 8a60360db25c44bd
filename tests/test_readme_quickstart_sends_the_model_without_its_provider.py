"""The README's quickstart, run as written against an OpenAI-compatible server that wants no key
(issue 31: a newcomer goes from the README to a real agent's report; `PROVIDER` in
`--model PROVIDER/MODEL` was never explained and an `anthropic/...` model went to the OpenAI
endpoint). The scripted mock model stands in for the server at the README's base URL; the run's
lines are the README's, plus a jobs dir and one task of the examples so the test stays small.

Pins what the README promises: the base URL alone (no OPENAI_API_KEY) configures the endpoint,
the model id sent is MODEL without `PROVIDER/`, the trial reaches the model and is scored, and the
job's report is where the README says."""

import json
import os
import re
import shlex
import subprocess

import pytest

from doc_pages import README, ROOT
from mock_model import MockModel


def quickstart_lines() -> tuple[str, str]:
    """(the export of TBFLOW_OPENAI_BASE_URL, the ./tbflow run line after it) of README.md."""
    lines = [x.split("  #", 1)[0].strip() for x in README.read_text(encoding="utf-8").splitlines()]
    i = next(n for n, x in enumerate(lines) if x.startswith("export TBFLOW_OPENAI_BASE_URL="))
    assert lines[i + 1].startswith("./tbflow run "), lines[i + 1]
    return lines[i], lines[i + 1]


@pytest.mark.docker
def test_readme_quickstart_reaches_a_keyless_endpoint_with_the_bare_model_id(docker_ready, tmp_path):
    export, run = quickstart_lines()
    documented_url = export.split("=", 1)[1]
    model = re.search(r"--model (\S+)", run).group(1)
    provider, _, model_id = model.partition("/")
    jobs = tmp_path / "jobs"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TBFLOW_OPENAI_BASE_URL")}
    with MockModel("echo hi") as mock:
        script = "\n".join([export.replace(re.sub(r"/v1$", "", documented_url), mock.base_url),
                            f"{run} --jobs-dir {shlex.quote(str(jobs))} --include word-count --job-name quickstart"])
        res = subprocess.run(["bash", "-euc", script], cwd=ROOT, env=env, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=900)
        sent = [r["body"].get("model") for r in mock.requests if r["path"].endswith("/chat/completions")]
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert provider and sent and set(sent) == {model_id}, (model, sent)
    job = jobs / "quickstart"
    assert (job / "report.md").is_file() and (job / "results.json").is_file()
    (trial,) = [json.loads(p.read_text()) for p in (job / "trials").glob("*/trial.json")]
    assert trial["validity"]["status"] == "scored", trial["validity"]
    assert json.loads((job / "job.json").read_text())["config"]["model"] == model
