"""tbflow's Prefect flows and what runs them (docs/architecture.md, "Package map").

The modules here are the flows Prefect runs: ``job_flow`` (a whole job), ``trial_flow`` (the trial
DAG), ``shard_flow`` (some trials of a job, on a worker of the trial pool), ``coordinator`` (the job
side of shards), ``report_flow`` and ``retention_flow``. ``job/`` is what they share, ``cli/`` the
``tbflow`` command, ``local_server/`` the processes a command starts next to itself.
"""
