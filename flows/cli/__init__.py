"""The `tbflow` command line: its commands, options, console output and how it stops."""
