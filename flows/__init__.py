"""tbflow's Prefect flows (the trial DAG, the job, the report) and, in ``flows.cli.main``, the command line."""
