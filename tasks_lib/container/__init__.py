"""Docker engine access, the trial container (sandbox), in-container scripts and file transfers."""
