"""A trajectory tbflow writes, for each API the gateway forwards, loads with Harbor 0.26's own
``Trajectory`` model (in its own Python 3.12 venv), and one that breaks ATIF's rules does not: the
check can fail."""

import json
import subprocess

from exchange_fixtures import APIS, record_two_turns
from harbor_check import SCRIPT, harbor_loads

from tasks_lib.gateway.exchange.exchange_reader import read_exchange
from tasks_lib.pricing.price_table import default_price_table
from tasks_lib.trajectory.atif_models import Agent
from tasks_lib.trajectory.build_trajectory import build_trajectory


def test_every_apis_trajectory_loads_and_a_broken_one_does_not(tmp_path):
    files = []
    for api in APIS:
        usage, _ = record_two_turns(api, tmp_path / f"{api}.jsonl")
        t = build_trajectory(read_exchange(tmp_path / f"{api}.jsonl"), Agent(name="h", version="1", model_name="m"),
                             usage, default_price_table(), session_id="s")
        files.append(tmp_path / f"{api}.json")
        files[-1].write_text(t.model_dump_json(exclude_none=True))
    out = harbor_loads(*files)
    assert out.count("valid ATIF-v1.7, 4 steps") == len(APIS), out
    broken = json.loads(files[0].read_text())
    broken["steps"][2]["observation"]["results"][0]["source_call_id"] = "no-such-call"
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    proc = subprocess.run([str(SCRIPT), str(tmp_path / "broken.json")], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1 and "no-such-call" in proc.stdout, proc.stdout + proc.stderr
