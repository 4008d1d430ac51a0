"""Process rewards inside verl 0.9.1's real reward loop: `referee.verl.RefereeStepRewardManager`,
loaded by verl from `reward.reward_manager.*` (source importlib) in a hydra-composed trainer
config, runs in Ray workers on a real DataProto; the step rewards of `referee score` on the same
rows land on the last token of each step in verl's token-level reward tensor
(`token_level_scores`, as `extract_reward` hands it to the trainer), each row summing to the
reward, which GRPO's per-row sum and GAE's per-token pass both read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import referee.verl as rv

HERE = Path(__file__).resolve().parent
SPEC = HERE / "specs" / "steps.yaml"
PROMPT_LEN = 24
SAMPLES = [
    dict(uid="a", prompt="6*12?", response="6*12=72.\n\nso \\boxed{72}", ground_truth="72",
         data_source="openai/gsm8k", num_turns=2, extra_info={"index": np.int64(0)}),
    dict(uid="a", prompt="6*12?", response="6*12=70 wrong\n\nwrong again\n\n\\boxed{70}", ground_truth="72",
         data_source="openai/gsm8k", num_turns=2, extra_info={"index": np.int64(0)}),
    dict(uid="b", prompt="1/2?", response="é wrong\n\n\\boxed{0.5}", ground_truth="\\frac12",
         data_source="lighteval/MATH", num_turns=2, extra_info={"index": np.int64(1)}),
]


def config(verl_config):
    return verl_config(
        "reward.reward_manager.source=importlib",
        f"reward.reward_manager.module.path={rv.__file__}",
        "reward.reward_manager.name=RefereeStepRewardManager",
        f"+reward.custom_reward_function.reward_kwargs.spec={SPEC}",
    )


def test_step_rewards_reach_the_token_level_tensor(ray_cluster, verl_config, make_batch, tokenizer, cli, reward_step):
    data = make_batch(SAMPLES)
    batch, tensor, extra = reward_step(config(verl_config), data)
    n = data.batch["attention_mask"][:, PROMPT_LEN:].sum(dim=1)
    texts = [tokenizer.decode(data.batch["responses"][i][: n[i]], skip_special_tokens=True) for i in range(len(data))]
    assert texts[2] == SAMPLES[2]["response"]  # the tokenizer round-trips, é included
    rows = [{"data_source": s["data_source"], "reward_model": {"ground_truth": s["ground_truth"]},
             "extra_info": {"index": int(s["extra_info"]["index"]), "num_turns": s["num_turns"]},
             "response": t} for s, t in zip(SAMPLES, texts)]
    want = cli(SPEC, rows, "--format", "verl")
    assert [w["reward"] for w in want] == [1.0, -1.0, 0.5]
    assert extra["referee_dense"].tolist() == [1.0, 1.0, 1.0]
    assert torch.equal(tensor, batch.batch["rm_scores"])  # the manager class assembled it
    for i, w in enumerate(want):
        row = tensor[i]
        ids = data.batch["responses"][i][: n[i]].tolist()
        # Each row sums to the reward (what GRPO's per-row sum reads) ...
        assert float(row.sum()) == pytest.approx(w["reward"]), i
        assert float(row[n[i]:].abs().sum()) == 0.0  # nothing on padding
        # ... and each step's value is on the token that completes the step's text.
        expect = torch.zeros_like(row)
        for st in w["step_rewards"]:
            k = next(k for k in range(len(ids))
                     if len(tokenizer.decode(ids[: k + 1], skip_special_tokens=True)) >= st["end"])
            assert tokenizer.decode(ids[: k + 1], skip_special_tokens=True)[: st["end"]] == texts[i][: st["end"]]
            expect[k] += st["value"]
        expect[n[i] - 1] += w["reward"] - sum(st["value"] for st in w["step_rewards"])
        assert torch.allclose(row, expect), (i, row, expect)
    # The wrong steps are where the penalty is: row 1 has -0.5 twice before its last token.
    assert sorted(float(v) for v in tensor[1][: n[1] - 1] if v != 0) == [-0.5, -0.5]


def test_gae_sees_the_step_placement(ray_cluster, verl_config, make_batch, reward_step):
    """verl's own GAE on the tensor: with zero values and gamma = lambda = 1 the advantage at a
    token is the reward still to come, so the tokens after a penalised step see it removed."""
    from verl.trainer.ppo.core_algos import compute_gae_advantage_return

    data = make_batch(SAMPLES[1:2])
    _, tensor, _ = reward_step(config(verl_config), data)
    mask = data.batch["response_mask"].float()
    adv, ret = compute_gae_advantage_return(tensor, torch.zeros_like(tensor), mask, gamma=1.0, lam=1.0)
    n = int(mask.sum())
    to_go = torch.flip(torch.cumsum(torch.flip(tensor[0][:n], [0]), 0), [0])
    assert torch.allclose(ret[0][:n], to_go)
    assert float(ret[0][0]) == pytest.approx(-1.0) and float(ret[0][n - 1]) == pytest.approx(float(tensor[0][n - 1]))


def test_dense_score_is_a_float_for_verl_paths_that_want_one():
    import pickle

    d = rv.DenseScore(0.5, [0.0, -0.5, 1.0])
    back = pickle.loads(pickle.dumps(d))
    assert back == 0.5 and back.tokens == [0.0, -0.5, 1.0]
    assert float(torch.tensor([d])[0]) == 0.5
    # verl's streaming agent-loop output field takes it as the reward.
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

    out = AgentLoopOutput(prompt_ids=[1], response_ids=[2], response_mask=[1],
                          metrics=AgentLoopMetrics(), reward_score=d)
    assert out.reward_score == 0.5


def test_referee_token_spans_agree_with_the_manager(tokenizer, tokenizer_dir):
    """Referee's own token spans (``referee.compile(spec, tokenizer=...)``: the Rust `tokenizers`
    crate reading the same ``tokenizer.json``) land on the tokens the manager's bisection finds
    with verl's HF tokenizer, on verl rows carrying ``completion_ids``; a step ending in a
    character split across byte-level tokens ends on its last byte's token."""
    import referee

    prog = referee.compile(SPEC, tokenizer=tokenizer_dir / "tokenizer.json")
    responses = [s["response"] for s in SAMPLES] + ["6*12=72 é\n\nso wrong é\n\n\\boxed{72}"]
    rows, all_ids = [], []
    for text in responses:
        ids = tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]
        assert tokenizer.decode(ids, skip_special_tokens=True) == text
        rows.append({"data_source": "openai/gsm8k", "reward_model": {"ground_truth": "72"},
                     "response": text, "completion_ids": ids})
        all_ids.append(ids)
    got = prog.score_detailed(rows, format="verl")
    for r, ids, text in zip(got, all_ids, responses):
        assert r.token_error is None, r.token_error
        ends = [st["end"] for st in r.step_rewards]
        assert [st["token_end"] - 1 for st in r.step_rewards] == rv.token_ends(tokenizer, ids, ends)
        for st in r.step_rewards:
            k = st["token_end"] - 1
            # The step's last token completes its text; the token before it does not.
            assert tokenizer.decode(ids[: k + 1], skip_special_tokens=True)[: st["end"]] == text[: st["end"]]
            assert not tokenizer.decode(ids[:k], skip_special_tokens=True).startswith(text[: st["end"]])
