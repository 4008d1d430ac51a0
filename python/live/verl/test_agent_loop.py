"""Multi-turn agent trajectories through verl 0.9.1's real agent loop and reward loop, on CPU.

verl's own code runs end to end: `AgentLoopWorker.generate_sequences` (what the trainer's
rollout calls) instantiates the agent loop per row from the registry (`referee_tool_agent`,
registered from agent_loops.yaml by verl's `agent_loop_config_path` loader, and verl's own
`tool_agent`), the loop tokenizes with the chat template, parses hermes tool calls, runs the
`BaseTool` from tools.yaml, and each finished trajectory is scored by the streaming call into a
`RewardLoopWorker` Ray actor (naive manager, referee.verl.compute_score from
`reward.custom_reward_function`). Only the model is ours: a scripted LLM client returning the
tokens of each turn. The rewards are compared with `referee score --format verl` on rows built
from verl's output batch (its decoded response, its recorded extra fields, its num_turns)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest

import referee.verl as rv

HERE = Path(__file__).resolve().parent
SPEC = HERE / "specs" / "agent.yaml"
GOLD = {"bookings": [{"flight": "LH123", "seat": "12A"}]}
CALL = '<tool_call>\n{{"name": "book", "arguments": {{"flight": "LH123", "seat": "{}"}}}}\n</tool_call>'
ANSWER = "<answer>booked</answer>"

# (question, agent loop, the policy's turns, the reward it must get). max_assistant_turns is 3.
EPISODES = [
    ("Book flight LH123, seat 12A.", "referee_tool_agent", [CALL.format("12A"), ANSWER], 1.0),
    # Claims the booking without making it: the state it started in says so.
    ("Book flight LH123, seat 12A, quickly.", "referee_tool_agent", [ANSWER], 0.3),
    # Books twice and is stopped at the turn limit mid-call: verl never parsed the last turn.
    ("Book flight LH123, seat 12A, twice over.", "referee_tool_agent",
     [CALL.format("12A"), CALL.format("12B"), CALL.format("12A")], 0.1),
    # verl's own tool agent with a call: a state (the tool started it) but no messages, so the
    # decoded response (tool result included) is graded, and it is no bare <answer>.
    ("Book flight LH123, seat 12A, plainly.", "tool_agent", [CALL.format("12A"), ANSWER], 0.8),
    # verl's own tool agent, no call: nothing recorded a state, so nobody can score it.
    ("Book flight LH123, seat 12A, or not.", "tool_agent", [ANSWER], -1.0),
]


class ScriptedLLM:
    """The LLM server's place (verl's `LLMServerClient.generate`): each trajectory (request id)
    gets its episode's next turn, found by the question in the prompt, ending in EOS."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.turns: dict[str, int] = {}
        self.prompts: list[str] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        text = self.tokenizer.decode(prompt_ids)
        self.prompts.append(text)
        # The longest question that appears: each is a prefix-free variant of the first.
        _, _, turns, _ = max((e for e in EPISODES if e[0] in text), key=lambda e: len(e[0]))
        n = self.turns.get(request_id, 0)
        self.turns[request_id] = n + 1
        ids = self.tokenizer.encode(turns[n], add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return TokenOutput(token_ids=ids, stop_reason="completed")


def _batch(episodes):
    from verl import DataProto

    n = len(episodes)
    obj = lambda xs: np.array(xs, dtype=object)  # noqa: E731
    return DataProto.from_single_dict({
        "raw_prompt": obj([[{"role": "user", "content": q}] for q, *_ in episodes]),
        "data_source": obj(["agent/booking"] * n),
        "reward_model": obj([{"style": "rule", "ground_truth": GOLD}] * n),
        "extra_info": obj([{"index": i, "initial_state": {"bookings": []}} for i in range(n)]),
        "index": np.arange(n),
        "tools_kwargs": obj([{}] * n),
        "uid": obj([f"u{i}" for i in range(n)]),
        "agent_name": obj([loop for _, loop, *_ in episodes]),
    }, meta_info={"global_steps": 1, "validate": False})


@pytest.fixture(scope="module")
def agent_run(ray_cluster, verl_config, chat_model_dir):
    """The episodes through verl's agent loop with streaming rewards, and what verl returned."""
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.experimental.reward_loop import RewardLoopManager

    sys.path.insert(0, str(HERE))  # tools.yaml names booking_tool.BookTool
    config = verl_config(
        "reward.reward_manager.name=naive",
        f"reward.custom_reward_function.path={rv.__file__}",
        "reward.custom_reward_function.name=compute_score",
        f"+reward.custom_reward_function.reward_kwargs.spec={SPEC}",
        "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.prompt_length=128",
        "actor_rollout_ref.rollout.response_length=256",
        "actor_rollout_ref.rollout.multi_turn.enable=true",
        "actor_rollout_ref.rollout.multi_turn.format=hermes",
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=3",
        f"actor_rollout_ref.rollout.multi_turn.tool_config_path={HERE / 'tools.yaml'}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={HERE / 'agent_loops.yaml'}",
        "actor_rollout_ref.rollout.agent.default_agent_loop=referee_tool_agent",
        model=chat_model_dir,
    )
    tokenizer = AutoTokenizer.from_pretrained(chat_model_dir)
    manager = RewardLoopManager(config)
    try:
        handles = manager.reward_loop_worker_handles
        assert handles  # a rule reward: verl scores each trajectory as it ends
        llm = ScriptedLLM(tokenizer)
        worker = AgentLoopWorker(config, llm, reward_loop_worker_handles=handles)
        loop = asyncio.new_event_loop()
        try:
            out = loop.run_until_complete(worker.generate_sequences(_batch(EPISODES)))
        finally:
            loop.close()
    finally:
        for w in manager.reward_loop_workers:
            ray_cluster.kill(w)
        sys.path.remove(str(HERE))
    return out, tokenizer, llm


def _decoded(tokenizer, out) -> list[str]:
    """The response as the managers decode it for `solution_str`."""
    plen = out.batch["prompts"].shape[1]
    n = out.batch["attention_mask"][:, plen:].sum(dim=1)
    return [tokenizer.decode(out.batch["responses"][i][: n[i]], skip_special_tokens=True)
            for i in range(len(out))]


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v.tolist() if hasattr(v, "tolist") else v


def test_trajectories_score_as_the_cli_scores_them(agent_run, cli):
    out, tokenizer, _ = agent_run
    nt = out.non_tensor_batch
    rows = []
    for i, text in enumerate(_decoded(tokenizer, out)):
        extra = {"index": i, "initial_state": {"bookings": []}, "num_turns": int(nt["__num_turns__"][i])}
        for key in ("messages", "state", "turn_scores", "tool_rewards"):
            if nt[key][i] is not None:
                extra[key] = _plain(nt[key][i])
        rows.append({"data_source": "agent/booking", "reward_model": {"ground_truth": GOLD},
                     "extra_info": extra, "response": text})
    want = cli(SPEC, rows, "--format", "verl")

    plen = out.batch["prompts"].shape[1]
    last = out.batch["attention_mask"][:, plen:].sum(dim=1) - 1
    rm = [float(out.batch["rm_scores"][i, last[i]]) for i in range(len(out))]
    assert rm == pytest.approx([w["reward"] for w in want])
    assert rm == pytest.approx([e[3] for e in EPISODES])
    for i, w in enumerate(want):
        assert nt["referee_error"][i] == float(w["status"] == "error")
        for name in ("booked", "format", "turns"):
            assert nt[f"referee/{name}"][i] == (w["components"].get(name) or 0.0), (i, name)
    # The unscoreable rollout is flagged, not a quiet 0.
    assert nt["referee_error"].tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert nt["referee/booked/valid"][4] == 0.0


def test_the_trajectory_verl_recorded(agent_run):
    out, tokenizer, llm = agent_run
    nt = out.non_tensor_batch
    messages, state = nt["messages"], nt["state"]
    # verl's tool agent loop: prompt, the parsed call, the tool's result, the final answer.
    m = messages[0]
    assert [x["role"] for x in m] == ["user", "assistant", "tool", "assistant"]
    assert m[1]["tool_calls"][0]["function"]["name"] == "book"
    assert m[2]["content"] == "booked LH123 seat 12A"
    assert m[3] == {"role": "assistant", "content": ANSWER}  # EOS removed, as in solution_str
    assert state[0] == GOLD
    assert state[1] == {"bookings": []} and [x["role"] for x in messages[1]] == ["user", "assistant"]
    # Stopped at the turn limit: the unparsed last turn is recorded as generated.
    assert [x["role"] for x in messages[2]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert messages[2][-1]["content"] == CALL.format("12A")
    assert state[2] == {"bookings": [GOLD["bookings"][0], {"flight": "LH123", "seat": "12B"}]}
    # verl's own loop records no messages, and a state only where a tool started one.
    assert messages[3] is None and messages[4] is None
    assert state[3] == GOLD and state[4] is None
    # verl's turn count: user + assistant turns + 1, and the tool's result reached the policy.
    assert nt["__num_turns__"].tolist() == [4, 2, 6, 4, 2]
    assert any("booked LH123 seat 12A" in p for p in llm.prompts)
    # The decoded response holds the tool's words (what a spec without messages grades).
    assert "booked LH123 seat 12A" in _decoded(tokenizer, out)[3]
