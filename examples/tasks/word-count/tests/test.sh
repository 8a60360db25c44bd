#!/bin/bash
# Terminal-Bench style verifier, offline: pytest from the image, reward from its exit status.
if [ "$PWD" = "/" ]; then echo "run from the task's WORKDIR, not /" >&2; exit 1; fi
if python3 -m pytest -p no:cacheprovider -rA /tests/test_outputs.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
