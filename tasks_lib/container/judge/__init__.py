"""tbflow-judge, the one static C program tbflow runs inside a trial container (docs/judge.md),
and how it runs there: its C sources (``*.c``, ``judge.h``), built and shipped in the tools volume
(``judge_tools``), mounted read-only with the task's tests (``judge_mounts``), every exec under a
host-side deadline (``judge_exec``) and its length-framed report (``judge_channel``).

In the container layer because the trial container (``sandbox.py``) execs through it. The
judge's evidence and the verdict it leads to are ``tasks_lib/judge/``.
"""
