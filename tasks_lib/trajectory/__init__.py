"""ATIF trajectories built on the host from the gateway's recording of a trial's model exchange."""
