"""Declarative harness files: the model of the file, its loader, and the files tbflow ships."""
