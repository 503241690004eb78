#!/usr/bin/env bash
# Mutation testing of the verdict rules (not CI): see ci/mutate.py, which holds the list of mutants.
exec python3 "$(dirname "$0")/mutate.py" "$@"
