"""What the job flow and the shard flow share: the job's parameters, its plan, running its trials in
order, its result and verdict, its progress and how the Prefect UI shows it (docs/architecture.md)."""
