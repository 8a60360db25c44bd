"""The local processes a tbflow command starts next to itself: the Prefect server (the command's
own or the warm shared one) and its guard. The
``*_main.py`` modules are ``python -m`` entry points (docs/architecture.md, "Package map")."""
