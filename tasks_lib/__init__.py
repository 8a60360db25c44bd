"""tbflow's domain, one sub-package per concern (see docs/architecture.md).

``container`` talks to the Docker engine and moves files; ``trial`` holds the stages of one trial and
its verdict; ``gateway`` is the host-side model gateway and its in-container relay; ``job`` loads
tasks and keeps the job store; ``report`` turns recorded trials into results and reports.
"""

__version__ = "0.1.0"
