"""Datasets by name: ``name@version`` from a registry file, ``org/name@ref`` from a ``dataset.toml``.

A name is resolved to a local directory of tasks before the job loads it: fetched once (pinned to
a full commit, shallow and sparse, locked and atomic) into a cache that is verified on every use
with Harbor's task content digest, never trusted as is (docs/datasets.md).
"""
