"""The per-job model gateway on the host and the static relay that reaches it from a networkless container."""
