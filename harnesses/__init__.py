"""Harness adapters: one module per agent, behind the interface in ``tasks_lib.trial.harness_api``."""
