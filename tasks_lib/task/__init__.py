"""Terminal-Bench tasks: the ``task.toml`` model and loading a task directory or a directory of them."""
