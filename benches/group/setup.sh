#!/bin/sh
# The anchor side of the group-stage bench needs numpy (TRL and verl compute advantages with
# torch tensor ops; numpy's vectorised equivalent is the closest stand-in without a GPU stack).
set -e
VENV="$HOME/.cache/referee/group-venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet 'numpy>=2,<3'
echo "$VENV/bin/python"
