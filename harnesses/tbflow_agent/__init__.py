"""``tbflow-agent``: tbflow's own small host-side agent, the reference user of ``HostHarness``.

A loop on the OpenAI Chat Completions API through tbflow's gateway (``loop``), one ``bash`` tool
run in the container with a per-call timeout and a ``task_complete`` tool (``tools``), the time
left shown to the model every turn, tool output bounded, and a JSONL event log written and
flushed as each event happens (``events``), so a trial cut off at its deadline still shows the
usage it had. The harness class itself is ``harness.TbflowAgentHarness``.
"""
