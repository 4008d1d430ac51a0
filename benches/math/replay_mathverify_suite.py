#!/usr/bin/env python3
"""Replays HuggingFace Math-Verify's own test suite (a held-out suite) through referee-math.

Steps:
  1. Math-Verify's venv at ~/.cache/referee/math-verify-venv (shared with
     benches/math/compare_math_verify.py: reused when present, otherwise created the same way with
     math-verify==0.9.0, antlr4-python3-runtime==4.13.2, sympy==1.14.0); pytest is added to it.
  2. `pip download --no-deps --no-binary :all: math-verify==0.9.0` into
     ~/.cache/referee/math-verify-sdist/ (cached) and unpacked there; the tests live in its tests/.
  3. Dump: `python -m pytest tests --collect-only -p <plugin>` from the sdist root, where the
     plugin (written by this script to a temp dir) hooks `pytest_collection_modifyitems` and, for
     every parametrized item whose params hold gold and pred (and expected/result), writes one JSONL
     row {id, gold, pred, expected, mode, match_types, precision, strict,
     allow_set_relation_comp}. The options are read from the test function's own source (its
     `compare_strings(...)` call: literal keywords, or names of the test's params), not from a
     table kept here; `verify(parse(g), parse(p))` calls are mode `default_parse`. Nothing runs.
  4. Adapter -> {"gold", "completion"} lines for `target/release/examples/verify_jsonl` (built
     with `cargo build --release -p referee-math --example verify_jsonl`, default options: gold
     bare, strict extraction). In Math-Verify's suite both sides are free text extracted the same
     way; referee-math parses the gold as a bare answer and extracts the completion's answer with
     strict markers only. The adapter rules, the same for every case (never per case):
       pred  P1. A pred that already carries a marker (`\\boxed`, `\\fbox`, the word "answer", a
                 `####` line) is passed as is.
             P2. A pred that is solution text is passed as is: longer than 200 chars, or prose
                 (two or more words in a row outside its math spans). referee-math then finds no
                 answer unless it has a marker (no unanchored extraction, by design).
             P3. Any other pred is a bare answer: it is presented as `\\boxed{<pred>}`, with the
                 delimiters of its balanced math spans (`$..$`, `$$..$$`, `\\(..\\)`, `\\[..\\]`)
                 removed and their contents kept (a lone `$` is currency and stays).
       gold  G1. A gold longer than 200 chars, or holding a `\\boxed`/`\\fbox` that is not its whole
                 content (a box inside text, several boxes), is replaced by the content of its LAST
                 brace-balanced box, joined (", ") with the boxes written back to back before it
                 (only whitespace, punctuation, math delimiters, `\\quad`, `\\,`, `and`, `or`
                 between): referee-math's own rule for a completion. A long gold without a box
                 gives its last math span instead (G1-dollar). The report counts both. On this
                 suite every G1 gold gives the same verdict as passing the original gold with
                 `GoldForm::Solution` (checked once with a scratch program; the example cannot
                 switch options).
             G2. Every other gold is passed as is (the bare parser unwraps `$..$` and `\\boxed{}`).
     Math-Verify's per-test options (match types, precision, strict, allow_set_relation_comp) cannot
     be passed to the example (it uses Options::default()); they are kept in the output so that a
     disagreement caused by a non-default option is visible.
  5. Compare: expected 1 <=> our status `correct`. A markdown report goes to stdout (totals, false
     positives / negatives against Math-Verify's labels, and EVERY disagreement with its
     classification), the JSON of all cases to benches/data/mathverify_suite_replay.json.

Classification of disagreements: (a) our bug or parser gap (we should agree), (b) deliberate
policy difference (Math-Verify's label encodes a lenient policy that crates/referee-math's
semantics reject on purpose: unanchored extraction, hedges, restated expressions, ...), (c)
artefact of the replay (a per-test option the example cannot mirror) or of the test data itself
(double-escaped or unclosed LaTeX, a `\\f` turned into a form feed). These are judgements, kept
in the CLASSIFIED table below, keyed by a hash of (gold, pred, expected, options); a disagreement
not in the table is listed as `unclassified`, and a classified case that now agrees is listed as
resolved (so the table goes stale visibly as bugs get fixed).

Usage: python3 benches/math/replay_mathverify_suite.py [--skip-install] [--rust-bin PATH]
Stdlib only; math-verify and pytest live in the venv.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA_DIR = os.path.join(ROOT, "benches", "data")
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "referee")
VENV = os.path.join(CACHE, "math-verify-venv")
SDIST_DIR = os.path.join(CACHE, "math-verify-sdist")
MV_VERSION = "0.9.0"
# Same requirements and marker as benches/math/compare_math_verify.py (the venv is shared).
MV_REQUIREMENTS = [f"math-verify=={MV_VERSION}", "antlr4-python3-runtime==4.13.2", "sympy==1.14.0"]
RUST_BIN = os.path.join(ROOT, "target", "release", "examples", "verify_jsonl")
OUT_JSON = os.path.join(DATA_DIR, "mathverify_suite_replay.json")
LONG = 200  # chars: above this a gold or pred is "a whole solution"

# ---------------------------------------------------------------- the pytest plugin (dump)

PLUGIN = r'''
"""Collection-only dump of Math-Verify's parametrized (gold, pred, expected) cases."""
import ast
import inspect
import json
import os
import textwrap

_OUT = os.environ["REFEREE_MV_DUMP"]


def _call_options(func, params):
    """Options of the verifier call inside the test function, read from its source."""
    src = textwrap.dedent(inspect.getsource(func))
    opts = {"mode": None, "match_types": ["latex", "expr"], "precision": 6, "strict": True,
            "allow_set_relation_comp": False}
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", None))
        if name == "compare_strings":
            opts["mode"] = "compare_strings"
            for kw in node.keywords:
                if isinstance(kw.value, ast.Name) and kw.value.id in params:
                    opts[kw.arg] = params[kw.value.id]
                else:
                    opts[kw.arg] = ast.literal_eval(kw.value)
        elif name == "verify" and opts["mode"] is None:
            opts["mode"] = "default_parse"
            opts["match_types"] = ["latex(default priority)", "expr"]
            for kw in node.keywords:
                opts[kw.arg] = ast.literal_eval(kw.value)
    return opts


def pytest_collection_modifyitems(session, config, items):
    with open(_OUT, "w", encoding="utf-8") as out:
        for item in items:
            cs = getattr(item, "callspec", None)
            if cs is None:
                continue
            p = cs.params
            if "gold" not in p or "pred" not in p:
                continue
            expected = p["expected"] if "expected" in p else p.get("result")
            if expected is None:
                continue
            opts = _call_options(item.function, p)
            row = {"id": item.nodeid, "gold": p["gold"], "pred": p["pred"],
                   "expected": int(bool(expected))}
            row.update(opts)
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
'''

# ---------------------------------------------------------------- set-up


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ensure_venv(skip_install: bool) -> str:
    py = os.path.join(VENV, "bin", "python")
    marker = os.path.join(VENV, ".referee-installed")
    want = " ".join(MV_REQUIREMENTS)
    installed = open(marker).read().strip() if os.path.exists(marker) else None
    if not (installed == want and os.path.exists(py)):
        if skip_install:
            if not os.path.exists(py):
                sys.exit(f"--skip-install, but there is no venv at {VENV}")
        else:
            if not os.path.exists(py):
                log(f"creating venv {VENV}")
                os.makedirs(CACHE, exist_ok=True)
                subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
            log(f"installing {want} into {VENV}")
            subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            *MV_REQUIREMENTS], check=True)
            subprocess.run([py, "-c", "import math_verify"], check=True)
            with open(marker, "w") as f:
                f.write(want + "\n")
    if subprocess.run([py, "-c", "import pytest"], capture_output=True).returncode != 0:
        if skip_install:
            sys.exit(f"--skip-install, but pytest is not installed in {VENV}")
        log(f"installing pytest into {VENV}")
        subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "pytest"],
                       check=True)
    return py


def ensure_sdist(py: str, skip_install: bool) -> str:
    """Returns the unpacked sdist root (cached under SDIST_DIR)."""
    os.makedirs(SDIST_DIR, exist_ok=True)
    tarball = os.path.join(SDIST_DIR, f"math_verify-{MV_VERSION}.tar.gz")
    if not os.path.exists(tarball):
        if skip_install:
            sys.exit(f"--skip-install, but {tarball} is missing")
        cmd = [py, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
               "--no-binary", ":all:", f"math-verify=={MV_VERSION}", "-d", SDIST_DIR]
        log("$ " + " ".join(cmd))
        subprocess.run(cmd, check=True)
    root = os.path.join(SDIST_DIR, f"math_verify-{MV_VERSION}")
    if not os.path.isdir(os.path.join(root, "tests")):
        with tarfile.open(tarball) as tf:
            for m in tf.getmembers():  # refuse absolute paths and `..`
                if m.name.startswith("/") or ".." in m.name.split("/"):
                    sys.exit(f"unsafe member in {tarball}: {m.name}")
            tf.extractall(SDIST_DIR)
    return root


def dump_cases(py: str, sdist_root: str, tmp: str) -> list[dict]:
    plugin_dir = os.path.join(tmp, "plugin")
    os.makedirs(plugin_dir)
    with open(os.path.join(plugin_dir, "referee_mv_dump.py"), "w") as f:
        f.write(PLUGIN)
    out = os.path.join(tmp, "cases.jsonl")
    env = dict(os.environ)
    env["PYTHONPATH"] = plugin_dir + os.pathsep + sdist_root
    env["REFEREE_MV_DUMP"] = out
    cmd = [py, "-m", "pytest", "tests", "--collect-only", "-q", "-p", "referee_mv_dump",
           "-p", "no:cacheprovider"]
    p = subprocess.run(cmd, cwd=sdist_root, env=env, capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(out):
        sys.exit(f"pytest collection failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    collected = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    cases = [json.loads(line) for line in open(out, encoding="utf-8") if line.strip()]
    log(f"pytest: {collected}; dumped {len(cases)} gold/pred/expected cases")
    return cases


def build_rust() -> str:
    env = dict(os.environ)
    env.pop("CARGO_TARGET_DIR", None)
    cmd = ["cargo", "build", "--release", "-p", "referee-math", "--example", "verify_jsonl"]
    log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"cargo build failed (exit {p.returncode}):\n" + "\n".join(p.stderr.splitlines()[-20:]))
    return RUST_BIN


# ---------------------------------------------------------------- the adapter

MARKER_RE = re.compile(r"\\boxed|\\fbox|\banswer\b|^\s*####", re.IGNORECASE | re.MULTILINE)
BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")
# Balanced math spans: $$..$$, $..$, \(..\), \[..\] (a lone `$` is currency and stays).
MATH_SPAN_RE = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
# Between two boxes that form one answer list (referee-math's back-to-back rule): only
# whitespace, punctuation, math delimiters, \quad / \qquad / \, / \ , and `and` / `or`.
BACK_TO_BACK_RE = re.compile(r"(?:\s|[.,;:]|\$|\\[()\[\]]|\\q?quad|\\[,; ]|\band\b|\bor\b)*")
PROSE_RE = re.compile(r"[A-Za-z']{2,}(?:\s+[A-Za-z']+)+")  # two words or more


def boxes(s: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of every brace-balanced \\boxed{} / \\fbox{}, left to right."""
    out, pos = [], 0
    while True:
        m = BOX_RE.search(s, pos)
        if not m:
            return out
        depth, i = 1, m.end()
        while i < len(s) and depth:
            depth += {"{": 1, "}": -1}.get(s[i], 0)
            i += 1
        if depth:  # unclosed: not a box
            return out
        out.append((m.start(), i, s[m.end():i - 1]))
        pos = i


def unwrap_math(s: str) -> str:
    """Removes the delimiters of every balanced math span, keeping the contents."""
    return MATH_SPAN_RE.sub(lambda m: next(g for g in m.groups() if g is not None), s).strip()


def adapt_gold(gold: str) -> tuple[str, str]:
    """(gold for referee-math, rule applied: G1-box, G1-dollar or G2)."""
    bx = boxes(gold)
    if len(gold) > LONG or (bx and unwrap_math(gold) != gold[bx[0][0]:bx[-1][1]].strip()) or len(bx) > 1:
        if bx:
            # The last box, plus the boxes written back to back before it (one answer list).
            k = len(bx) - 1
            while k > 0 and BACK_TO_BACK_RE.fullmatch(gold[bx[k - 1][1]:bx[k][0]]):
                k -= 1
            return ", ".join(c.strip() for _, _, c in bx[k:]), "G1-box"
        spans = list(MATH_SPAN_RE.finditer(gold))
        if spans:
            return next(g for g in spans[-1].groups() if g is not None).strip(), "G1-dollar"
    return gold, "G2"


def adapt_pred(pred: str) -> tuple[str, str]:
    """(completion for referee-math, rule applied: P1, P2 or P3)."""
    if MARKER_RE.search(pred):
        return pred, "P1"
    if len(pred) > LONG or PROSE_RE.search(MATH_SPAN_RE.sub(" ", pred)):
        return pred, "P2"
    return "\\boxed{" + unwrap_math(pred) + "}", "P3"


# ---------------------------------------------------------------- classification (judgement)

# key (see case_key) -> (category, one-line reason). Categories: "a" our bug, "b" deliberate policy
# difference, "c" adapter artefact. Filled in from a run; a disagreement missing here is listed as
# unclassified, a listed case that agrees is reported as resolved.
CLASSIFIED: dict[str, tuple[str, str]] = {
    # (a) our bugs / parser gaps: we should agree.
    "11424c3c": ("a", r"`16,\!386.20` read as the list 16, 386.20: `,\!` (MATH-style thousands separator) not accepted"),
    "02ca690a": ("a", r"`11,\! 111,\! 111,\! 100` read as a list: `,\!` (+ space) thousands separator not accepted"),
    "c9c709c8": ("a", r"`32,\! 349` read as a list: `,\!` thousands separator not accepted"),
    "3ed2cdab": ("a", r"`(12,102)` read as the number 12102 (comma + 3 digits = thousands) inside an interval union; "
                      r"also `\boxed{(12,102)}` vs `(12, 102)` and `[12,102]` are wrong"),
    "b43f11dd": ("a", r"`14 {, }916` (spaces in/around `{,}`; math-mode spaces are insignificant) is unparseable_answer"),
    "88a77f6a": ("a", r"`Final Answer: The volume of $ABCDEFGH$ is 120.`: the whole sentence is read as text; "
                      r"should take what follows its last `is`"),
    "fe920184": ("a", r"`Final Answer: The maximum number of points ... is 19.`: sentence read as text, as 88a77f6a"),
    "c4909f5b": ("a", r"`Final Answer: The largest $n$ is 34.`: sentence read as text, as 88a77f6a"),
    "fc52302a": ("b", r"false chain `x = 5+5+1 = 7 = 11`: every link of a chain must hold (the true chain `x = 5+5+1 = 11` is correct)"),
    "05a6d872": ("b", r"false chain `z = 3+3 = 2`: every link of a chain must hold (`z = 2` is correct against the gold chain)"),
    "7c1eeec5": ("c", r"double-escaped `\\le` in the test data; un-escaped, `-2 \le x \le 7` vs `x \in [-2,7]` is correct"),
    "b04e5061": ("c", r"as 7c1eeec5"),
    "ad9bf6ac": ("c", r"double-escaped pred; un-escaped, gold `x \in [-2,7]` vs `-2 \le x \le 7` is correct"),
    "1ae9f6f8": ("a", r"gold `(p,q)=(3,2)` vs `(3,2)`: a tuple-of-symbols lhs is not unwrapped (gold `k=1` vs `1` is)"),
    "e9c19c5f": ("a", r"same as 1ae9f6f8 (boxed pred)"),
    "3389162a": ("a", r"gold `(p,q,r)=(3,2,7)` vs `(3,2,7)`: same as 1ae9f6f8"),
    "5daef53c": ("a", r"gold `|AB|=1` vs `1`: a named-quantity lhs (segment, ratio of segments) is not unwrapped "
                      r"(policy to settle: MV and we both reject `2x+z=1` vs `1`)"),
    "cc5719a2": ("a", r"gold `\frac{NO}{BO}=\frac{1}{\sqrt{6}}` vs the value: named-quantity lhs, as 5daef53c"),
    "9431e803": ("a", r"gold `AB=4,CD=5` vs `4, 5`: list of named-quantity assignments, as 5daef53c"),
    "0a4187bd": ("a", r"gold `p=5,q=2;p=7,q=2` (`;` separates solutions) vs `(5,2),(7,2)`: not read as a set of "
                      r"tuples (low priority)"),
    "dea90f63": ("a", r"ratio `7:32` is unparseable (answer side; gold `S_{MBCN}:S=7:32` parses as text)"),
    "b3ce8e1f": ("a", r"ratio gold `V_{1}:V_{2}=11:21` is unparseable_gold (`:` not in the grammar)"),
    "eb201716": ("a", r"ratio gold `A:B=1` is unparseable_gold"),
    "0acbec3e": ("a", r"`12:00` vs itself is unparseable_gold (time/ratio `:`; note 12:00 as a ratio divides by 0)"),
    "494dc5c6": ("a", r"gold `0<f(x)<1` vs `(0,1)`: inequality in `f(x)` not matched to the interval (`0<x<1` is)"),
    "07811499": ("a", r"`(x, y) = (5, 8) \quad \text{and} \quad (8, 5)`: the `(x, y) =` prefix binds only the first "
                      r"element (`x = 1, 2` vs `1, 2` is correct)"),
    "75a61ec9": ("a", r"gold `..., \quadx_{2}=...` (NuminaMath strips spaces) is unparseable_gold (unknown "
                      r"`\quadx`); with `\quad x_{2}` the pair is correct (low priority)"),
    "c9a717e0": ("a", r"same `\quadx_{2}` gold as 75a61ec9"),
    "0633b5cb": ("a", r"gold `1\leq|z|\leq \frac{3}{2}` vs the union `[-3/2,-1] \cup [1,3/2]`: |z| inequality not "
                      r"solved (low priority)"),
    "546ee3ac": ("a", r"`\sum_{k=0}^{n-1}` is not in the grammar: unparseable_gold (low priority)"),
    "8643f30a": ("a", r"gold `0,111` read as 111 (comma + 3 digits = thousands even after a lone leading 0); "
                      r"should be 0.111 or a list, never 111 (spec gap, low priority)"),
    # (b) deliberate policy differences.
    "3e225ee8": ("b", r"plain-space thousands separator `1 000` is not in our grammar (ambiguous with a list)"),
    "54c256e0": ("b", r"bare-comma decimal `1000,99` is a list for us (decimal comma only as `{,}`)"),
    "95cc0bed": ("b", r"gold `1,22` is the list {1, 22} for us (bare comma + 2 digits)"),
    "f757e1a9": ("b", r"unmarked prose `Soucis : 2,74 $ a..` (unanchored extraction; also a bare-comma decimal)"),
    "e55c4307": ("b", r"unanchored extraction from prose (no marker): no_answer by design"),
    "e7cc750a": ("b", r"unanchored extraction from prose: no_answer by design"),
    "af6e5a96": ("b", r"unanchored extraction from prose: no_answer by design"),
    "40663273": ("b", r"`Answer \[ 9 \]`: `Answer` without `:`/`is` is not one of our answer phrases"),
    "6d27df58": ("b", r"`Answer $ 9 $`: `Answer` without `:`/`is` is not an answer phrase"),
    "39453f11": ("b", r"`Answer $$ 9 $$`: as 40663273"),
    "eddda2fb": ("b", r"`Answer \( 9 \)`: as 40663273"),
    "3f933268": ("b", r"`Answer \( (9+1) \)`: no answer phrase; also unevaluated `9+1` vs literal 10 (reject)"),
    "acada154": ("b", r"`Answer \[ 9 \]` over lines: as 40663273"),
    "fb7a259b": ("b", r"`Answer $$ 9 $$` over lines: as 40663273"),
    "4ea78660": ("b", r"`Answer $ \frac{1}{2} \$ = \frac{10}{9} $`: not an answer phrase (and a false chain)"),
    "7154bca8": ("b", r"unanchored: `Therefore $x \geq 5$ is the solution.` has no marker"),
    "c58906d3": ("b", r"unanchored: `We find that $x \lt 3$.`"),
    "7b1ae333": ("b", r"unanchored: `Thus $x <= 2$ is our answer.` (answer named after the value)"),
    "bb12758b": ("b", r"unanchored: `Therefore $x \gt 5$ is the solution.`"),
    "9f7ee35a": ("b", r"unanchored: `We find that $x \neq 3$.`"),
    "fb4af4b3": ("b", r"unanchored: `The solution is $x != 5$`"),
    "b74422fb": ("b", r"`x = 5+5+1 = 1/3 \approx 11`: we read the last value (11)"),
    "15c694d2": ("b", r"`x=1/3\approx1.3`: we read the value after `\approx` (1.3, a false approximation)"),
    "529551c8": ("b", r"`0.0833333333333333` for `\frac{1}{12}`: a decimal approximation of an exact gold scores 0 by default (MATH convention; `approximate:` opts in)"),
    "9ccd59a6": ("b", r"`(0.6,2.6667]` for `(\frac{3}{5},\frac{8}{3}]`: 2.6667 approximates 8/3, 0 by default (MATH convention); with `approximate: {significant_digits: 4}` it agrees"),
    "d87ee051": ("b", r"gold `1 = \zzz = x = 0` (unknown command): unparseable_gold, never scored"),
    "d28be14b": ("b", r"unanchored: matrix in prose without marker"),
    "f2bbaf82": ("b", r"unanchored: matrix in prose without marker"),
    "b0f2dd9a": ("b", r"unanchored: matrix in prose without marker"),
    "7911ddda": ("b", r"unanchored: matrix in prose without marker"),
    "58f8c4ef": ("b", r"unanchored, and `A + B` restates the question (unevaluated)"),
    "5cb4142c": ("b", r"unanchored, and `I \cdot I` restates the question (unevaluated)"),
    "71fd125f": ("b", r"unanchored: solution without marker (`... is 2/3.`)"),
    "afe820bf": ("b", r"unanchored: solution without marker"),
    "99aab6d7": ("b", r"unanchored: solution without marker"),
    "ab3beb09": ("b", r"unanchored: solution without marker (`increases by 100%.`)"),
    "7b2db867": ("b", r"`Final Answer: Jane started growing Sphere 3 hours ago.`: number inside a prose sentence"),
    "aa7d002f": ("b", r"tuple `(1,3)` vs set `{1,3}`"),
    "a013a8a3": ("b", r"boxes separated by prose (`for part (a) and`) are not one answer list: last box only"),
    "37cf75f2": ("b", r"boxes separated by `y_2 =` text are not one answer list: last box only"),
    "16a6719d": ("b", r"gold-side: `\boxed{1} papers and \boxed{2} bins` -> last box 2 (our back-to-back rule)"),
    "ff00504a": ("b", r"gold-side: boxes separated by `++++++` are not one list -> 4 (our back-to-back rule)"),
    "3796492d": ("b", r"`1 - 1/e` vs `1 + 1/e`: Math-Verify's false positive (trailing `\mathrm{e}` deleted as a unit)"),
    # (c) artefacts of the replay or of the test data.
    "f0131fce": ("c", r"double-escaped pred (`\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}`); un-escaped it is correct"),
    "3ec79dbf": ("c", r"answer wrapped in JSON-escaped quotes `\"$12 $ and $13 $\"`; with plain quotes it is correct"),
    "c8e09a9a": ("c", r"malformed gold (double-escaped, unclosed `\\boxed{`); the pred also renames n -> x"),
    "cff26918": ("c", r"test-data bug: `\f` of `\frac` became a form feed (non-raw string); identical strings, "
                      r"unparseable_gold"),
    "8c46bf1a": ("c", r"test option precision=2 not mirrored (0.33 vs 1/3; MV at its default precision rejects too)"),
    "5d4075d6": ("c", r"test option strict=False not mirrored (`f(x)` vs `f(y)`; the strict=True twin agrees)"),
}


def case_key(case: dict) -> str:
    """8 hex digits of SHA-1 over gold, pred, expected and the Math-Verify options (identical
    duplicates in the suite share a key)."""
    fields = [case["gold"], case["pred"], str(case["expected"]), case["mode"], ",".join(case["match_types"]),
              str(case["precision"]), str(case["strict"]), str(case["allow_set_relation_comp"])]
    return hashlib.sha1("\0".join(fields).encode("utf-8")).hexdigest()[:8]


# ---------------------------------------------------------------- report


def short(s: str, limit: int = 120) -> str:
    """At most `limit` chars: long text keeps its head and its tail (where an answer usually is)."""
    s = s.replace("\n", "⏎")
    s = "".join(ch if ch >= " " else f"\\x{ord(ch):02x}" for ch in s)
    if len(s) > limit:
        head = limit * 2 // 5
        s = s[:head] + "…" + s[len(s) - (limit - head - 1):]
    return "`" + s.replace("`", "'").replace("|", "\\|") + "`"


def opts_note(c: dict) -> str:
    notes = []
    if c["mode"] == "default_parse":
        notes.append("verify(parse(g), parse(p))")
    elif c["match_types"] != ["latex", "expr"]:
        notes.append("+".join(c["match_types"]) + " only")
    if c["precision"] != 6:
        notes.append(f"precision={c['precision']}")
    if not c["strict"]:
        notes.append("strict=False")
    if c["allow_set_relation_comp"]:
        notes.append("allow_set_relation_comp")
    return ", ".join(notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip-install", action="store_true", help="never pip (venv and sdist must exist)")
    ap.add_argument("--rust-bin", help="use this verify_jsonl binary instead of building it")
    ap.add_argument("--json-out", default=OUT_JSON)
    args = ap.parse_args()

    py = ensure_venv(args.skip_install)
    sdist_root = ensure_sdist(py, args.skip_install)
    tmp = tempfile.mkdtemp(prefix="referee-mv-suite-")
    try:
        cases = dump_cases(py, sdist_root, tmp)
        for c in cases:
            c["gold_in"], c["gold_rule"] = adapt_gold(c["gold"])
            c["completion_in"], c["pred_rule"] = adapt_pred(c["pred"])
        pairs = os.path.join(tmp, "pairs.jsonl")
        with open(pairs, "w", encoding="utf-8") as f:
            for c in cases:
                f.write(json.dumps({"gold": c["gold_in"], "completion": c["completion_in"]},
                                   ensure_ascii=False) + "\n")
        rust_bin = args.rust_bin or build_rust()
        p = subprocess.run([rust_bin, pairs], cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{rust_bin} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
        verdicts = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
        if len(verdicts) != len(cases):
            sys.exit(f"{rust_bin} printed {len(verdicts)} verdicts for {len(cases)} cases")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for c, v in zip(cases, verdicts):
        c["status"] = v["status"]
        c["ours"] = int(v["status"] == "correct")
        c["agree"] = c["ours"] == c["expected"]
        c["key"] = case_key(c)
        cat = CLASSIFIED.get(c["key"])
        c["category"] = (cat[0] if cat else "unclassified") if not c["agree"] else None
        c["reason"] = cat[1] if cat and not c["agree"] else None
        c["resolved"] = bool(cat) and c["agree"]
    report(cases, args.json_out)


def report(cases: list[dict], json_out: str) -> None:
    n = len(cases)
    agree = sum(c["agree"] for c in cases)
    fp = [c for c in cases if c["ours"] == 1 and c["expected"] == 0]
    fn = [c for c in cases if c["ours"] == 0 and c["expected"] == 1]
    rules = Counter(c["gold_rule"] for c in cases) + Counter(c["pred_rule"] for c in cases)
    statuses = Counter(c["status"] for c in cases)
    cats = Counter(c["category"] for c in cases if not c["agree"])
    files = Counter(c["id"].split("::")[0].split("/")[-1] for c in cases)

    print(f"# referee-math on Math-Verify {MV_VERSION}'s test suite\n")
    print(f"Cases: **{n}** ({sum(c['expected'] for c in cases)} expect 1, "
          f"{sum(1 - c['expected'] for c in cases)} expect 0) from "
          + ", ".join(f"{k} {v}" for k, v in sorted(files.items())) + ".\n")
    print(f"- Agree: **{agree}/{n}** ({100 * agree / n:.1f}%); disagree: **{n - agree}**")
    print(f"- False positives (we say correct, Math-Verify 0): **{len(fp)}**; "
          f"false negatives (Math-Verify 1, we do not): **{len(fn)}**")
    print("- Disagreements by class: " + ", ".join(
        f"({k}) {cats[k]}" for k in ["a", "b", "c", "unclassified"] if cats[k]))
    print("- Our statuses: " + ", ".join(f"{k} {v}" for k, v in statuses.most_common()))
    print(f"- Adapter: gold G1-box {rules['G1-box']}, G1-dollar {rules['G1-dollar']}, "
          f"G2 {rules['G2']}; pred P1 (marker, as is) {rules['P1']}, P2 (solution/prose, as is) "
          f"{rules['P2']}, P3 (boxed) {rules['P3']}")
    semantic = sum(1 for c in cases if c["precision"] != 6 or not c["strict"] or c["allow_set_relation_comp"])
    extraction = sum(1 for c in cases if c["mode"] == "default_parse" or c["match_types"] != ["latex", "expr"])
    print(f"- Math-Verify options the example cannot mirror: precision/strict/allow_set_relation_comp "
          f"non-default in {semantic} cases; other extraction configs (latex-only, expr-only, default "
          f"boxed priority) in {extraction}")
    resolved = [c for c in cases if c["resolved"]]
    if resolved:
        print(f"- Classified earlier, now agreeing (resolved): {len(resolved)}: "
              + ", ".join(c["key"] for c in resolved))
    order = {"a": 0, "unclassified": 1, "c": 2, "b": 3}
    rank = {k: i for i, k in enumerate(CLASSIFIED)}  # the table's order groups related cases
    dis = sorted((c for c in cases if not c["agree"]),
                 key=lambda c: (order[c["category"]], rank.get(c["key"], len(rank)), c["id"]))
    names = {"a": "(a) our bug", "b": "(b) deliberate policy difference", "c": "(c) artefact of the replay or of the test data",
             "unclassified": "unclassified"}
    cur = None
    for c in dis:
        if c["category"] != cur:
            cur = c["category"]
            print(f"\n## {names[cur]} ({cats[cur]})\n")
            print("| key | test | gold | pred | MV | ours | adapter | why |")
            print("|---|---|---|---|---|---|---|---|")
        test = c["id"].split("::")[-1].split("[")[0]
        opt = opts_note(c)
        print(f"| {c['key']} | {test}{' (' + opt + ')' if opt else ''} | {short(c['gold'])} | "
              f"{short(c['pred'])} | {c['expected']} | {c['status']} | {c['gold_rule']}/{c['pred_rule']} | "
              f"{(c['reason'] or '').replace('|', chr(92) + '|')} |")

    os.makedirs(os.path.dirname(json_out), exist_ok=True)
    with open(json_out, "w", encoding="utf-8") as f:
        json.dump({"math_verify": MV_VERSION, "n": n, "agree": agree, "false_positives": len(fp),
                   "false_negatives": len(fn), "categories": dict(cats), "statuses": dict(statuses),
                   "cases": cases}, f, ensure_ascii=False, indent=1)
    print(f"\nAll cases with our status: {os.path.relpath(json_out, ROOT)}")


if __name__ == "__main__":
    main()
