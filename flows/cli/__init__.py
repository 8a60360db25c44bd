"""The `tbflow` command line: options, console output, progress, and the report/diff commands."""
