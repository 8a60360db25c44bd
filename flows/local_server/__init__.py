"""The processes a tbflow command starts next to itself: its Prefect server and guard
(command_server.py starts server_main.py; guard.py), and the settings of tbflow's servers. The
``*_main.py`` module is a ``python -m`` entry point (docs/architecture.md, "Package map")."""
