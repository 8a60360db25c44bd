"""A job's trials: their start order, the run-time history that orders them, the job's name
template, and the containers of crashed runs (orphans)."""
