"""referee.trl, called exactly as TRL's GRPOTrainer._calculate_rewards calls a reward function:
keyword arguments prompts, completions, completion_ids, trainer_state, log_extra, log_metric and
every dataset column except `prompt`, as lists with one entry per completion. Compared with
`referee score --format trl` on the same rows."""

from __future__ import annotations

import math
from pathlib import Path

import referee
import referee.trl


def call_like_trl(funcs, prompts, completions, **columns):
    """What TRL does: each function called with the same keyword arguments; logged extras
    and metrics collected."""
    extra, metrics = {}, {}
    out = []
    for f in funcs:
        out.append(f(
            prompts=prompts,
            completions=completions,
            completion_ids=[[1, 2, 3]] * len(completions),
            trainer_state=object(),  # a TrainerState in TRL: opaque here
            log_extra=lambda col, vals: extra.__setitem__(col, list(vals)),
            log_metric=lambda name, v: metrics.__setitem__(name, v),
            **columns,
        ))
    return out, extra, metrics


def test_standard_format_matches_cli(cli, specs: Path, trl_batch):
    prompts, completions, solutions = trl_batch
    spec = specs / "math_format.yaml"
    funcs = referee.trl.reward_funcs(spec)
    weights = referee.trl.reward_weights(spec)
    assert [f.__name__ for f in funcs] == ["accuracy", "format"]
    assert weights == [1.0, 0.5]
    n = len(completions)
    (acc, fmt), extra, metrics = call_like_trl(
        funcs, prompts, completions, solution=solutions, task=["math"] * n,
        images=[object()] * n,  # a column that is not row data is left out
    )
    rows = [{"prompt": p, "completion": c, "solution": s}
            for p, c, s in zip(prompts, completions, solutions)]
    want = cli(spec, rows, "--format", "trl")
    assert acc == [w["components"]["accuracy"] for w in want]
    assert fmt == [w["components"]["format"] for w in want]
    # TRL's weighted sum of the functions is the spec's reward.
    assert [a * weights[0] + b * weights[1] for a, b in zip(acc, fmt)] == [w["reward"] for w in want]
    assert 0 < sum(acc) < n and 0 < sum(fmt) < n
    assert extra["accuracy/status"] == ["ok"] * n
    assert metrics["referee/accuracy/errors"] == 0.0


def test_conversational_format_matches_cli(cli, specs: Path, trl_batch):
    prompts, completions, solutions = trl_batch
    conv_prompts = [[{"role": "system", "content": "Be terse."}, {"role": "user", "content": p}] for p in prompts]
    conv_completions = [[{"role": "assistant", "content": c}] for c in completions]
    spec = specs / "math_format.yaml"
    funcs = referee.trl.reward_funcs(spec)
    (acc, fmt), _, _ = call_like_trl(funcs, conv_prompts, conv_completions, solution=solutions)
    rows = [{"prompt": p, "completion": c, "solution": s}
            for p, c, s in zip(conv_prompts, conv_completions, solutions)]
    want = cli(spec, rows, "--format", "trl")
    assert acc == [w["components"]["accuracy"] for w in want]
    assert fmt == [w["components"]["format"] for w in want]
    # Same verdicts as the standard format on the same texts.
    (acc_std, fmt_std), _, _ = call_like_trl(funcs, prompts, completions, solution=solutions)
    assert (acc, fmt) == (acc_std, fmt_std)


def test_unscorable_samples_are_none_and_logged(specs: Path):
    funcs = referee.trl.reward_funcs(specs / "math_format.yaml")
    (acc, fmt), extra, metrics = call_like_trl(
        funcs, ["q", "q", "q"], ["\\boxed{1}", "\\boxed{2}", "\\boxed{3}"],
        solution=["1", "\\frac{", "3"],  # an unparseable gold: no reward, not a 0
    )
    assert acc[0] == 1.0 and acc[1] is None and acc[2] == 1.0
    assert fmt == [0.0, 0.0, 0.0]
    assert extra["accuracy/status"][1] not in ("ok", "error") and extra["accuracy/status"][0] == "ok"
    assert metrics["referee/accuracy/errors"] == 1.0
    # TRL turns None into NaN and leaves that function out for that sample.
    assert math.isnan(float("nan") if acc[1] is None else acc[1])


def test_one_callable_for_a_spec_that_is_not_a_sum(specs: Path):
    (f,) = referee.trl.reward_funcs(specs / "label.yaml")
    assert f.__name__ == "correct"
    assert referee.trl.reward_weights(specs / "label.yaml") == [1.0]
    assert f(prompts=["q"], completions=["\\boxed{7}"], label=["7"]) == [1.0]
    # Without prompts (TRL always sends them, but a user may not).
    assert f(completions=["\\boxed{8}"], label=["7"]) == [0.0]


def test_program_and_dict_specs(specs: Path):
    prog = referee.compile(specs / "math_format.yaml")
    assert [f.__name__ for f in referee.trl.reward_funcs(prog)] == ["accuracy", "format"]
    spec = {"type": "weighted_sum", "normalize": "abs_sum", "weights": [3, -1],
            "inputs": [{"type": "format", "style": "r1"}, {"type": "regex", "pattern": "sorry"}]}
    funcs = referee.trl.reward_funcs(spec)
    assert [f.__name__ for f in funcs] == ["format", "regex"]
    assert referee.trl.reward_weights(spec) == [0.75, -0.25]
    assert funcs[1](prompts=["q"], completions=["I am sorry"]) == [1.0]
