"""referee.openrlhf.reward_func, called as OpenRLHF calls a `--reward.remote_url <file>.py`
function (queries = templated prompt + response with special tokens, prompts, labels), against
`referee serve`'s `/get_reward` (OpenRLHF's HTTP protocol) on the same batch."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import referee_bin
from referee.openrlhf import reward_func

TEMPLATE = "<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"
BATCH = [
    ("What is 6*7?", "42", "It is \\boxed{42}.<|im_end|>"),
    ("What is 6*7?", "42", "\\boxed{41}<|im_end|>"),
    ("Half of 1?", "\\frac{1}{2}", "So \\boxed{0.5}<|endoftext|>"),
    ("Half of 1?", "\\frac{1}{2}", "I don't know"),
]


@pytest.fixture(scope="module")
def server(specs: Path):
    proc = subprocess.Popen(
        [str(referee_bin()), "serve", "--host", "127.0.0.1", "--port", "0",
         "--spec", f"default={specs / 'label.yaml'}"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        line = proc.stdout.readline()
        yield json.loads(line)["listening"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_reward_func_matches_get_reward(server, specs: Path, monkeypatch):
    monkeypatch.setenv("REFEREE_SPEC", str(specs / "label.yaml"))
    prompts = [TEMPLATE.format(q=q) for q, _, _ in BATCH]
    queries = [p + r for p, (_, _, r) in zip(prompts, BATCH)]
    labels = [lab for _, lab, _ in BATCH]
    got = reward_func(queries, prompts, labels)
    req = urllib.request.Request(
        server + "/get_reward",
        data=json.dumps({"query": queries, "prompts": prompts, "labels": labels}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        want = json.load(r)
    rewards = got["rewards"].tolist() if hasattr(got["rewards"], "tolist") else got["rewards"]
    assert rewards == want["rewards"] == [1.0, 0.0, 1.0, 0.0]
    assert got["scores"] == want["scores"]
    assert got["extra_logs"]["correct"] == want["extra_logs"]["correct"]
    assert got["extra_logs"]["error"] == [float(e) for e in want["extra_logs"]["error"]]


def test_prompt_is_stripped_from_the_query(specs: Path):
    # The prompt holds the right answer; only the response may be graded.
    prompt = TEMPLATE.format(q="Is it \\boxed{42}?")
    out = reward_func([prompt + "no idea"], [prompt], ["42"], spec=str(specs / "label.yaml"))
    assert list(out["rewards"]) == [0.0]
    # A query that does not start with its prompt is graded whole.
    out = reward_func(["\\boxed{42}"], ["something else"], ["42"], spec=str(specs / "label.yaml"))
    assert list(out["rewards"]) == [1.0]


def test_failures_are_flagged(specs: Path):
    out = reward_func(["\\boxed{1}"], [""], ["\\frac{"], spec=str(specs / "label.yaml"))
    assert list(out["rewards"]) == [0.0] and out["extra_logs"]["error"] == [1.0]


def test_example_file_loads_as_openrlhf_loads_it(specs: Path, monkeypatch):
    # OpenRLHF imports the `.py` given to --reward.remote_url by path and takes `reward_func`.
    import importlib.util

    from conftest import ROOT

    monkeypatch.setenv("REFEREE_SPEC", str(specs / "label.yaml"))
    spec = importlib.util.spec_from_file_location("reward_func", ROOT / "examples" / "openrlhf" / "reward_func.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    prompt = TEMPLATE.format(q="6*7?")
    out = mod.reward_func([prompt + "\\boxed{42}<|im_end|>"], [prompt], ["42"])
    assert list(out["rewards"]) == [1.0] and out["extra_logs"]["correct"] == [1.0]
