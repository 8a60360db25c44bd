"""The judge: what decides a trial's verifier verdict from evidence the agent cannot forge
(docs/judge.md). This package is its evidence and its verdict: the judge's report, typed
(``judge_report``), the reward files read (``rewards``), the runner files the agent planted and
whether test.sh used them (``runner_use``, ``runner_roles``, ``verifier_tests``, ``nspkg_pth``),
tampering (``tampering``), and the run-verifier stage's verdict as one table (``verdict_table``).

The program itself, C, and how tbflow runs it in a trial container (its exec, its report channel,
its read-only mounts, its tools volume) are ``tasks_lib/container/judge/``: every exec of the
container layer (``sandbox.py``) goes through it, so it sits in that layer, below this one.
"""
