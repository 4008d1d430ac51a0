"""The audits from Python (`referee.fuzz`, `referee.evaluate`, `referee.compare` and the
`Program` methods): each report must be the CLI's `--json` report on the same data and options,
key for key and number for number, since both shells call the same core code."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import referee

from conftest import ROOT, referee_bin

WEAK = "fixtures/fuzz/weak"


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    """Paths relative to the repository, as the CLI is run with them: the reports name the spec
    by the path as given."""
    monkeypatch.chdir(ROOT)


def cli_report(*args: str, codes=(0,)) -> dict:
    out = subprocess.run(
        [str(referee_bin()), *args], capture_output=True, cwd=ROOT, check=False
    )
    assert out.returncode in codes, out.stderr.decode()
    return json.loads(out.stdout)


def cli_error(*args: str) -> str:
    out = subprocess.run([str(referee_bin()), *args], capture_output=True, cwd=ROOT, check=False)
    assert out.returncode != 0
    return out.stderr.decode()


def read_jsonl(path: str) -> list[dict]:
    return [json.loads(l) for l in (ROOT / path).read_text().splitlines() if l.strip()]


# ---------------------------------------------------------------- fuzz


@pytest.mark.parametrize("spec", ["last_number", "step_count", "substring"])
def test_fuzz_defaults_match_the_cli(spec):
    path = f"{WEAK}/{spec}.yaml"
    want = cli_report("fuzz", path, f"{WEAK}/data.jsonl", "--json", codes=(0, 5))
    got = referee.fuzz(path, f"{WEAK}/data.jsonl")
    assert got == want
    assert got["kind"] == "fuzz" and got["spec"] == path
    assert got["families"] and got["failed"] is True


def test_fuzz_options_match_the_cli():
    args = dict(families="answer_listing,empty,exploits", per_row=2, seed=3, perturb=False,
                examples=1, limit=4, max_rate=0.5, threshold=0.75)
    want = cli_report(
        "fuzz", f"{WEAK}/substring.yaml", f"{WEAK}/data.jsonl", "--json", "--families",
        "answer_listing,empty,exploits", "--per-row", "2", "--seed", "3", "--no-perturb",
        "--examples", "1", "--rows", "4", "--max-rate", "0.5", "--threshold", "0.75",
        codes=(0, 5),
    )
    got = referee.fuzz(f"{WEAK}/substring.yaml", f"{WEAK}/data.jsonl", **args)
    assert got == want
    assert got["perturbations"] == []
    assert all(f["variants"] <= 4 * 2 for f in got["families"])
    # A list of families is the same as the comma-separated text.
    args["families"] = ["answer_listing", "empty", "exploits"]
    assert referee.fuzz(f"{WEAK}/substring.yaml", f"{WEAK}/data.jsonl", **args) == want


def test_fuzz_rows_as_dicts_and_program_method():
    program = referee.compile(f"{WEAK}/last_number.yaml")
    from_file = program.fuzz(f"{WEAK}/data.jsonl", seed=1)
    from_rows = program.fuzz(read_jsonl(f"{WEAK}/data.jsonl"), seed=1)
    assert from_rows == from_file
    assert from_file["spec"] == f"{WEAK}/last_number.yaml"
    # An inline spec has no file name: the report's spec is null.
    inline = referee.compile((ROOT / WEAK / "last_number.yaml").read_text())
    r = inline.fuzz(read_jsonl(f"{WEAK}/data.jsonl"), seed=1)
    assert r["spec"] is None
    assert r["families"] == from_file["families"]


def test_fuzz_own_exploit_corpus_matches_the_cli():
    want = cli_report("fuzz", f"{WEAK}/last_number.yaml", f"{WEAK}/data.jsonl", "--json",
                      "--exploits", "fixtures/exploits", "--families", "exploits",
                      "--no-perturb", codes=(0, 5))
    got = referee.fuzz(f"{WEAK}/last_number.yaml", f"{WEAK}/data.jsonl",
                       exploits=ROOT / "fixtures/exploits", families="exploits", perturb=False)
    assert got == want
    assert [f["family"] for f in got["families"]] == ["exploits:numeric"]


def test_fuzz_skips_rows_that_do_not_map_with_a_warning():
    rows = read_jsonl(f"{WEAK}/data.jsonl")
    with pytest.warns(UserWarning, match=r"rows:2: skipped"):
        r = referee.fuzz(f"{WEAK}/last_number.yaml", [rows[0], {"nothing": 1}, *rows[1:]])
    assert r == referee.fuzz(f"{WEAK}/last_number.yaml", rows)
    with pytest.raises(ValueError, match="rows has no rows to fuzz"):
        referee.fuzz(f"{WEAK}/last_number.yaml", [{"nothing": 1}])


class _Judge:
    """scripts/fault_server.py: an OpenAI-compatible endpoint that gives every answer 10/10."""

    def __init__(self):
        self.p = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts/fault_server.py"), "--mode", "ok", "--content",
             json.dumps({"steps": [{"description": "c", "conclusion": "perfect"}], "result": 10})],
            stdout=subprocess.PIPE,
        )
        self.url = json.loads(self.p.stdout.readline())["base_url"]

    def close(self):
        self.p.kill()
        self.p.wait()


def test_fuzz_a_judged_spec_with_judge_options_matches_the_cli():
    judge = _Judge()
    try:
        args = ["--families", "empty,master_key", "--per-row", "2", "--no-perturb"]
        want = cli_report("fuzz", f"{WEAK}/judge_no_prefilter.yaml", f"{WEAK}/data.jsonl",
                          "--json", "--judge-cache", "off", "--judge", judge.url, *args,
                          codes=(5,))
        got = referee.fuzz(f"{WEAK}/judge_no_prefilter.yaml", f"{WEAK}/data.jsonl",
                           judge=judge.url, judge_cache="off", families="empty,master_key",
                           per_row=2, perturb=False)
    finally:
        judge.close()
    assert got == want
    assert all(f["passed"] == f["variants"] > 0 for f in got["families"])


def test_fuzz_bad_options_raise_the_cli_message():
    err = cli_error("fuzz", f"{WEAK}/last_number.yaml", f"{WEAK}/data.jsonl", "--families", "nope")
    msg = err.removeprefix("error: ").strip()
    with pytest.raises(ValueError) as e:
        referee.fuzz(f"{WEAK}/last_number.yaml", f"{WEAK}/data.jsonl", families="nope")
    assert str(e.value) == msg
    with pytest.raises(ValueError, match="unknown row format|format"):
        referee.fuzz(f"{WEAK}/last_number.yaml", f"{WEAK}/data.jsonl", format="csv")
    with pytest.raises(TypeError):
        referee.fuzz(f"{WEAK}/last_number.yaml", f"{WEAK}/data.jsonl", per_rows=2)
    with pytest.raises(referee.SpecError):
        referee.fuzz({"type": "no_such_grader"}, f"{WEAK}/data.jsonl")


def test_fuzz_releases_the_gil():
    """Another Python thread keeps running while the core fuzzes."""
    rows = read_jsonl(f"{WEAK}/data.jsonl") * 20
    program = referee.compile(f"{WEAK}/step_count.yaml")
    done = threading.Event()
    ticks = 0

    def work():
        program.fuzz(rows, per_row=16)
        done.set()

    t = threading.Thread(target=work)
    start = time.perf_counter()
    t.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    elapsed = time.perf_counter() - start
    # With the GIL held for the whole run the loop would tick once or twice.
    assert ticks > min(20, elapsed * 100), (ticks, elapsed)


# ---------------------------------------------------------------- eval


EVAL_CASES = [
    ("fixtures/eval/math.yaml", "fixtures/eval/rewardbench.jsonl", {}, []),
    ("fixtures/eval/math.yaml", "fixtures/eval/rewardbench_sections.jsonl", {}, []),
    ("fixtures/eval/math.yaml", "fixtures/eval/rewardbench2.jsonl", {}, []),
    ("fixtures/eval/math.yaml", "fixtures/eval/scores.jsonl",
     dict(gold="human", bootstrap=200, seed=7),
     ["--gold", "human", "--bootstrap", "200", "--seed", "7"]),
    ("fixtures/eval/math.yaml", "fixtures/eval/scores.jsonl",
     dict(gold="human", bootstrap=50, confidence=0.8, format="scores"),
     ["--gold", "human", "--bootstrap", "50", "--confidence", "0.8", "--format", "scores"]),
    ("fixtures/eval/math.yaml", "fixtures/eval/best_of_n.jsonl", dict(correct="correct"),
     ["--correct", "correct"]),
    ("examples/math/spec.yaml", "examples/eval/rewardbench.jsonl", {}, []),
]


@pytest.mark.parametrize("spec,data,kw,flags", EVAL_CASES, ids=lambda x: str(x)[:40])
def test_eval_matches_the_cli(spec, data, kw, flags):
    want = cli_report("eval", spec, data, "--quiet", *flags)
    assert referee.evaluate(spec, data, **kw) == want
    # Rows given as dicts, and the Program method, give the same report.
    assert referee.compile(spec).evaluate(read_jsonl(data), **kw) == want
    assert want["kind"] == "eval" and want["spec"] == spec


def test_eval_from_parquet_is_the_jsonl_report(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "rb.parquet"
    pq.write_table(pa.Table.from_pylist(read_jsonl("fixtures/eval/rewardbench.jsonl")), path)
    want = cli_report("eval", "fixtures/eval/math.yaml", "fixtures/eval/rewardbench.jsonl", "-q")
    assert referee.evaluate("fixtures/eval/math.yaml", path) == want


def test_eval_bad_options_raise_the_cli_message():
    err = cli_error("eval", "fixtures/eval/math.yaml", "fixtures/eval/scores.jsonl",
                    "--gold", "human", "--confidence", "1.5")
    with pytest.raises(ValueError) as e:
        referee.evaluate("fixtures/eval/math.yaml", "fixtures/eval/scores.jsonl", gold="human",
                         confidence=1.5)
    assert str(e.value) == err.removeprefix("error: ").strip()
    with pytest.raises(ValueError, match="unknown eval format `nope`"):
        referee.evaluate("fixtures/eval/math.yaml", "fixtures/eval/scores.jsonl", format="nope")
    # Data whose format cannot be told: the core's message, as the CLI prints it after the path.
    err = cli_error("eval", "fixtures/eval/math.yaml", "fixtures/eval/compare.jsonl")
    with pytest.raises(ValueError, match="cannot tell the data format") as e:
        referee.evaluate("fixtures/eval/math.yaml", "fixtures/eval/compare.jsonl")
    assert str(e.value) in err


# ---------------------------------------------------------------- compare


def test_compare_two_specs_matches_the_cli():
    a, b, data = "fixtures/eval/lenient.yaml", "fixtures/eval/math.yaml", "fixtures/eval/compare.jsonl"
    want = cli_report("compare", a, b, data, "-q")
    assert referee.compare(a, b, data) == want
    assert want["a"] == a and want["b"] == b and want["disagreements"]
    pa, pb = referee.compile(a), referee.compile(b)
    assert pa.compare(pb, read_jsonl(data)) == want


@pytest.mark.parametrize("flags,kw", [
    ([], {}),
    (["--threshold", "0.9"], dict(threshold=0.9)),
    (["--subset-field", "answer_type"], dict(subset_field="answer_type")),
])
def test_compare_with_a_label_matches_the_cli(flags, kw):
    a, data = "fixtures/eval/lenient.yaml", "fixtures/eval/compare.jsonl"
    want = cli_report("compare", a, data, "--label", "correct", "-q", *flags)
    got = referee.compare(a, None, data, label="correct", **kw)
    assert got == want
    assert got["b"] == "label:correct"


def test_compare_bad_options():
    a, b, data = "fixtures/eval/lenient.yaml", "fixtures/eval/math.yaml", "fixtures/eval/compare.jsonl"
    with pytest.raises(ValueError, match="a second spec .* or a label field"):
        referee.compare(a, None, data)
    with pytest.raises(ValueError, match="no second spec"):
        referee.compare(a, b, data, label="correct")
    with pytest.raises(ValueError, match="threshold"):
        referee.compare(a, b, data, threshold=float("inf"))
    with pytest.raises(referee.SpecError):
        referee.compare(a, "type: nope\n", data)
