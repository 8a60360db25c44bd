"""Pinned, integrity-checked agent bundles: npm packages and a Node runtime, cached on the host."""
