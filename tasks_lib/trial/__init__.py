"""The stages of one trial (image, agent, process groups, verifier), its verdict, and the harness contract."""
