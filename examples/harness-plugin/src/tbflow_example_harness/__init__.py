"""An example tbflow harness plug-in (docs/write-a-harness.md)."""
