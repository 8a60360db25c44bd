"""tbflow's Prefect flows (the trial DAG, the job, the report) and the CLI that starts them."""

__version__ = "0.1.0"
