"""Serve the job flow as a deployment (a Prefect runner watching a real server on 127.0.0.1), the
way a long-running tbflow service runs it. Used by the tests of cancellation and crash hooks.

Usage: python tests/served_job_flow.py API_URL_FILE
The API URL is written to API_URL_FILE once the server answers; the runner then serves
deployment ``tbflow-job/tbflow-test`` until it is stopped.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from flows.local_server.prefect_settings import configure_embedded_prefect

    configure_embedded_prefect()
    from flows.local_server import command_server
    server = command_server.start()
    server.wait_ready()
    Path(sys.argv[1]).write_text(server.api_url)
    from flows.job_flow import job_flow

    job_flow.serve(name="tbflow-test", pause_on_shutdown=False, print_starting_message=False)


if __name__ == "__main__":  # the runner starts flow runs with multiprocessing "spawn", which imports this file
    main()
