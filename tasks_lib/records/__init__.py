"""The record contract: what a trial and a job leave on disk (``trial.json``, ``job.json``) and the
job's identity that a resume must match (docs/results.schema.json)."""
