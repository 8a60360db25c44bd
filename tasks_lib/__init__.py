"""tbflow's domain, one sub-package per concern (see docs/architecture.md, "Package map").

From the top layer down: ``report`` turns recorded trials into results and reports; ``trial`` holds
the stages of one trial and its verdict; ``job`` orders a job's trials and finds its orphans;
``store`` keeps job directories (local or behind a URL) and their locks; ``records`` is the record
contract; ``gateway`` (the model gateway), ``dataset`` (datasets by name) and ``task`` (task.toml)
sit side by side; ``container`` talks to the Docker engine, at the bottom. The modules at this
level (``errors``, ``interrupts``, ``text_clean``, ...) are used by all. ``pyproject.toml``
(``[tool.importlinter]``) enforces the order.
"""

__version__ = "0.1.0"
