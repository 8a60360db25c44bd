"""A trial's cost is decided once (``tasks_lib/records/trial_cost.py``) and reads the same in the
terminal, report.md, report.html (its trials table and the trial page, where the verdict line once
said "cost unknown" and the trajectory "$0.0008"), results.json and the Harbor export (which once
wrote null, reading the CLI's figure). ``tbflow report JOB --prices FILE`` prices a finished job
from its recorded exchange; a total with a call of unknown tokens is a lower bound everywhere.
The exchange is recorded by the real gateway in front of a stand-in provider on loopback."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from exchange_fixtures import booked
from gateway_helpers import APIS, make_rig
from report_fixtures import make_job, make_trial, write_job_dir
from typer.testing import CliRunner

from flows.cli.report_cli import register
from flows.cli.result_lines import summary_lines
from mock_model import USAGE
from tasks_lib.gateway.exchange.exchange_model import EXCHANGE_FILE
from tasks_lib.gateway.exchange.exchange_recorder import ExchangeRecorder
from tasks_lib.gateway.gateway_usage import GatewayUsage, TokenCount
from tasks_lib.publish.harbor_export import export_harbor
from tasks_lib.records.record_models import Usage
from tasks_lib.store.job_store import JobStore

CHAT = APIS[1]
PRICES = {"gpt-test": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}
EXPECTED = sum(i * 1e-6 + o * 2e-6 for i, o in (USAGE["tool"], USAGE["final"]))


def _job(tmp_path: Path) -> tuple[Path, str]:
    """A finished job of one model trial whose CLI reported tokens but no cost; its exchange
    recorded by the gateway (model gpt-test: in no default price table)."""
    trial = make_trial("a", "codex", model="openai/gpt-test", usage=Usage(input_tokens=280, output_tokens=20))
    job_dir = write_job_dir(tmp_path, make_job([trial], harnesses=["codex"]), [trial])
    store = JobStore(job_dir)
    with make_rig(tmp_path) as rig:
        token = rig.gateway.register_trial("t", record_to=store.trial_dir(trial.trial_id) / EXCHANGE_FILE)
        with rig.client() as client:
            for turn in ("tool", "final"):
                assert client.post(CHAT.path, headers=CHAT.headers(token), json=CHAT.body(turn, False)).is_success
        usage = rig.gateway.usage("t")
    store.write_trial(trial.model_copy(update={"agent": trial.agent.model_copy(update={"gateway_usage": usage})}))
    return job_dir, trial.trial_id


def _report(job_dir: Path, *args: str) -> str:
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["report", str(job_dir), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _everywhere(job_dir: Path, trial_id: str, tmp_path: Path) -> dict[str, str]:
    """The trial's cost as each place shows it."""
    results = json.loads((job_dir / "results.json").read_text())
    md = (job_dir / "report.md").read_text()
    trial_row = next(line for line in md.splitlines() if line.startswith("| codex | a |"))
    page = next((job_dir / "report-trials").glob("*.html")).read_text()
    export = tmp_path / "export"
    export_harbor(job_dir, export)
    harbor = json.loads(next(export.glob(f"*/{trial_id}*/result.json")).read_text())["agent_result"]
    return {"record": json.dumps(results["trials"][0]["cost"]), "md_trial": trial_row.split("|")[-2].strip(),
            "terminal": summary_lines(JobStore(job_dir).trial_records())[0].split("cost: ")[1],
            "page_verdict": page.split('<span id="cost">')[1].split("</span>")[0],
            "page_trajectory": page.split(" · cost ")[1].split(" · ")[0],
            "html_index": (job_dir / "report.html").read_text(), "harbor": json.dumps(harbor)}


def test_report_prices_a_finished_job_and_every_place_shows_the_same_cost(tmp_path):
    job_dir, trial_id = _job(tmp_path)
    before = _report(job_dir)
    assert "cost unknown" in before  # gpt-test has no price yet
    table = tmp_path / "prices.json"
    table.write_text(json.dumps(PRICES))
    shown = f"${EXPECTED:,.4f}"
    out = _report(job_dir, "--prices", str(table))
    assert f"cost {shown}" in out
    record = JobStore(job_dir).read_trial(trial_id)
    assert abs(record.agent.cost_usd - EXPECTED) < 1e-12 and record.validity.status == "scored"
    trajectory = json.loads((job_dir / "trials" / trial_id / "trajectory.json").read_text())
    assert abs(trajectory["final_metrics"]["total_cost_usd"] - EXPECTED) < 1e-12
    seen = _everywhere(job_dir, trial_id, tmp_path)
    assert json.loads(seen["record"])["usd"] == record.agent.cost_usd
    assert seen["md_trial"] == seen["terminal"] == seen["page_verdict"] == seen["page_trajectory"] == shown
    assert f'<td class="n">{shown}</td>' in seen["html_index"] and "cost unknown" not in seen["html_index"]
    assert json.loads(seen["harbor"])["cost_usd"] == record.agent.cost_usd  # no longer null
    assert json.loads((job_dir / "prices.json").read_text())["gpt-test"]["input_cost_per_token"] == 1e-6


def test_a_total_with_a_call_of_unknown_tokens_is_a_lower_bound_everywhere(tmp_path):
    job_dir, trial_id = _job(tmp_path)
    recorder = ExchangeRecorder(lambda s: s)
    exchange = job_dir / "trials" / trial_id / EXCHANGE_FILE
    recorder.start("t", exchange)  # the same recorder the gateway runs, fed one call without usage
    reply = b'{"model": "gpt-test", "choices": [{"message": {"role": "assistant", "content": "hi"}}]}'
    out = booked(TokenCount(1000, 10), json.dumps(CHAT.body("tool", False)).encode(), reply)
    out.sse = False
    recorder.record("t", "POST", CHAT.path, out, time.monotonic())
    out.tokens = None  # the provider's reply carried no usage
    recorder.record("t", "POST", CHAT.path, out, time.monotonic())
    store = JobStore(job_dir)
    record = store.read_trial(trial_id)
    usage = GatewayUsage()
    usage.add(200, TokenCount(1000, 10), None)
    usage.add(200, None, None)
    store.write_trial(record.model_copy(update={"agent": record.agent.model_copy(update={"gateway_usage": usage})}))
    table = tmp_path / "prices.json"
    table.write_text(json.dumps(PRICES))
    _report(job_dir, "--prices", str(table))
    record = store.read_trial(trial_id)
    assert record.agent.cost_usd is None and record.agent.calls_unpriced == 1
    shown = f"≥ ${1000 * 1e-6 + 10 * 2e-6:,.4f}, 1 call unpriced"
    seen = _everywhere(job_dir, trial_id, tmp_path)
    assert seen["md_trial"] == seen["terminal"] == seen["page_verdict"] == seen["page_trajectory"] == shown
    assert json.loads(seen["record"])["usd"] is None and json.loads(seen["record"])["calls_unpriced"] == 1
    harbor = json.loads(seen["harbor"])
    assert harbor["cost_usd"] is None and harbor["metadata"]["tbflow"]["cost"]["shown"] == shown
