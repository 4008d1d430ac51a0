"""referee.verl inside verl 0.9.1's real reward loop: the managers `naive`, `dapo` and `gdpo`,
loaded by verl from `reward.custom_reward_function.*` in a hydra-composed trainer config, run in
Ray workers by verl's RewardLoopManager on a real DataProto; their scores and reward_extra_info
are compared with `referee score --format verl` on the same rows. The GDPO advantages are
computed by verl's own compute_advantage, as its trainer does after the reward step."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import torch

import referee.verl as rv

SPECS = Path(__file__).resolve().parent / "specs"
SPEC = SPECS / "math.yaml"
PROMPT_LEN = 24  # conftest's make_batch pads prompts to this
# What the agent loop and the dataset really put in extra_info: numpy scalars and arrays, the
# tool kwargs of multi-turn rows, an index; and values JSON cannot hold.
SAMPLES = [
    dict(uid="q1", prompt="What is 6 times 12?", response="The answer is \\boxed{72}.", ground_truth="72",
         data_source="openai/gsm8k", num_turns=2,
         extra_info={"index": np.int64(0), "split": "train", "tools_kwargs": {"calc": {"create_kwargs": {
             "ground_truth": "72", "limits": np.array([1, 2], dtype=np.int32)}}},
             "score_hint": np.float32(0.5)}),
    dict(uid="q1", prompt="What is 6 times 12?", response="It is 71.", ground_truth="72",
         data_source="openai/gsm8k", num_turns=3,
         extra_info={"index": np.int64(0), "split": "train", "tools_kwargs": {},
                     "turn_scores": np.array([0.1, np.nan]), "blob": b"\x00bytes"}),
    dict(uid="q2", prompt="Compute 1/2 as a fraction.", response="\\boxed{\\frac{1}{2}}", ground_truth="0.5",
         data_source="lighteval/MATH", num_turns=1,
         extra_info={"index": np.int32(1), "tools_kwargs": {"x": (1, 2)}, 7: {"nested": np.bool_(True)}}),
    # An unreadable gold: the row cannot be scored (the spec's on_error, -0.5, and the flag).
    dict(uid="q2", prompt="Compute 1/2 as a fraction.", response="\\boxed{1/2}", ground_truth="\\frac{",
         data_source="lighteval/MATH", num_turns=1, extra_info={"index": np.int32(1)}),
]


def plain(v):
    """JSON for the CLI rows: what the core's boundary conversion makes of verl's values."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if hasattr(v, "tolist"):
        return plain(v.tolist())
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def decoded(tokenizer, data) -> list[str]:
    """The response text verl's managers decode from the batch (the last valid token is EOS)."""
    out = []
    for i in range(len(data)):
        n = int(data.batch["attention_mask"][i][PROMPT_LEN:].sum())
        out.append(tokenizer.decode(data.batch["responses"][i][:n], skip_special_tokens=True))
    return out


def expected(cli, tokenizer, data, prefix="referee/", valid=True):
    """`referee score --format verl` on the rows the managers score, in the adapter's keys."""
    rows = [{"data_source": s["data_source"],
             "reward_model": {"style": "rule", "ground_truth": s["ground_truth"]},
             "extra_info": plain({**s["extra_info"], "num_turns": s["num_turns"]}),
             "response": text}
            for s, text in zip(SAMPLES, decoded(tokenizer, data))]
    want = []
    for w in cli(SPEC, rows, "--format", "verl"):
        d = {"score": 0.0 if w["reward"] is None else w["reward"],
             "referee_ok": float(w["status"] == "ok"), "referee_error": float(w["status"] == "error"),
             "referee_not_applicable": float(w["status"] == "not_applicable")}
        for name in ("correct", "boxed"):
            v = w["components"].get(name)
            d[prefix + name] = 0.0 if v is None else v
            if valid:
                d[prefix + name + "/valid"] = 0.0 if v is None else 1.0
        want.append(d)
    return want


def scores_at_last_token(data, reward_tensor) -> list[float]:
    n = data.batch["attention_mask"][:, PROMPT_LEN:].sum(dim=1)
    return [float(reward_tensor[i, n[i] - 1]) for i in range(len(data))]


def config_for(verl_config, manager, *extra, name="compute_score", path=None, spec=SPEC):
    return verl_config(
        f"reward.reward_manager.name={manager}",
        f"reward.custom_reward_function.path={path or rv.__file__}",
        f"reward.custom_reward_function.name={name}",
        f"+reward.custom_reward_function.reward_kwargs.spec={spec}",
        *extra,
    )


@pytest.mark.parametrize("manager", ["naive", "dapo", "gdpo"])
def test_managers_score_as_the_cli_does(manager, ray_cluster, verl_config, make_batch, tokenizer, cli, reward_step):
    data = make_batch(SAMPLES)
    assert decoded(tokenizer, data)[0] == SAMPLES[0]["response"]  # the tokenizer round-trips
    batch, reward_tensor, extra = reward_step(config_for(verl_config, manager), data)
    want = expected(cli, tokenizer, data)

    assert scores_at_last_token(data, reward_tensor) == pytest.approx([w["score"] for w in want])
    assert set(extra) == set(want[0])  # verl stacked one key set for every row
    for key, column in extra.items():
        assert column.tolist() == pytest.approx([w[key] for w in want]), key
    # The correct answer with np.int32 num_turns (and numpy extra_info) scores 1.
    assert want[0]["score"] == 1.0 and extra["score"][0] == 1.0 and extra["referee_ok"][0] == 1.0
    # The unscorable row: the spec's on_error, flagged, and no crash.
    assert extra["score"][3] == -0.5 and extra["referee_error"][3] == 1.0
    assert extra["referee/correct/valid"][3] == 0.0 and extra["referee/boxed/valid"][3] == 1.0


def test_gdpo_advantages_from_components_have_no_nan(ray_cluster, verl_config, make_batch, tokenizer, cli, reward_step):
    from verl.trainer.ppo.ray_trainer import compute_advantage

    spec = SPECS / "gdpo.yaml"
    # A root on_error does not split into parts: GDPO then reads the one score.
    assert rv.gdpo_settings(str(SPEC)) == {"gdpo_reward_keys": ["score"], "gdpo_reward_weights": [1.0]}
    overrides = rv.gdpo_overrides(str(spec))
    assert overrides == ["algorithm.adv_estimator=gdpo",
                         "++algorithm.gdpo_reward_keys=['referee/correct','referee/boxed']",
                         "++algorithm.gdpo_reward_weights=[0.9,0.1]"]
    config = config_for(verl_config, "gdpo", *overrides, spec=spec)
    assert list(config.algorithm.gdpo_reward_keys) == ["referee/correct", "referee/boxed"]
    assert list(config.algorithm.gdpo_reward_weights) == [0.9, 0.1]

    # Two groups of four: each with a right, a wrong, an unscorable and an unboxed answer.
    samples = []
    for uid in ("g1", "g2"):
        for s in (SAMPLES[0], SAMPLES[1], SAMPLES[3], {**SAMPLES[0], "response": "72"}):
            samples.append({**s, "uid": uid})
    data = make_batch(samples)
    batch, reward_tensor, extra = reward_step(config, data)
    assert not any(math.isnan(v) for col in extra.values() for v in col.tolist())
    # The unscorable rows: no value for `correct`, so 0.0 and not valid; the flag; no crash.
    assert extra["referee/correct"][2] == 0.0 and extra["referee/correct/valid"][2] == 0.0
    assert extra["referee_error"][2] == 1.0 and extra["score"][2] == 0.0

    # What ray_trainer.fit does next: token-level scores, extra info into the batch, advantages.
    batch.batch["token_level_scores"] = reward_tensor
    batch.non_tensor_batch.update({k: np.array(v) for k, v in extra.items()})
    batch.batch["token_level_rewards"] = batch.batch["token_level_scores"]
    batch = compute_advantage(
        batch, adv_estimator=config.algorithm.adv_estimator, gamma=config.algorithm.gamma,
        lam=config.algorithm.lam, num_repeat=1,
        norm_adv_by_std_in_grpo=config.algorithm.get("norm_adv_by_std_in_grpo", True),
        config=config.algorithm,
    )
    adv = batch.batch["advantages"]
    assert torch.isfinite(adv).all()
    per_row = adv.sum(dim=1)
    assert per_row[0] > 0 > per_row[1]  # the right answer is pushed up, the wrong one down
    assert torch.allclose(per_row[:4], per_row[4:])  # the same group twice, the same advantages


def test_async_function_is_awaited_with_the_same_scores(ray_cluster, verl_config, make_batch, tokenizer, cli, reward_step):
    data = make_batch(SAMPLES)
    _, reward_tensor, extra = reward_step(
        config_for(verl_config, "naive", name="compute_score_async"), data)
    want = expected(cli, tokenizer, data)
    assert scores_at_last_token(data, reward_tensor) == pytest.approx([w["score"] for w in want])
    for key, column in extra.items():
        assert column.tolist() == pytest.approx([w[key] for w in want]), key


def test_agent_loop_streaming_call(ray_cluster, verl_config, make_batch, tokenizer, cli):
    """The agent loop's own call (`_compute_score`): one trajectory's DataProto with the dataset
    kwargs as arrays, `__num_turns__` from a list of ints, and the tool's extra fields."""
    from verl import DataProto
    from verl.experimental.reward_loop import RewardLoopManager

    manager = RewardLoopManager(config_for(verl_config, "naive"))
    try:
        handles = manager.reward_loop_worker_handles
        assert handles  # no reward model: verl streams rewards from the agent loop
        full = make_batch(SAMPLES)
        got = []
        for i, s in enumerate(SAMPLES):
            one = full[i:i + 1]
            kwargs = {k: one.non_tensor_batch[k][0] for k in
                      ("data_source", "reward_model", "extra_info", "index", "tools_kwargs", "raw_prompt")}
            non_tensor = {
                **{k: np.array([v]) if not isinstance(v, (dict, list)) else np.array([v], dtype=object)
                   for k, v in kwargs.items()},
                "__num_turns__": np.array([s["num_turns"]]),
                "tool_extra_fields": np.array([{"turn_scores": [0.5], "tool_rewards": np.array([1.0])}],
                                              dtype=object),
                "prompt_len": np.array([PROMPT_LEN]), "response_len": np.array([10]),
            }
            data = DataProto(batch=one.batch, non_tensor_batch=non_tensor)
            got.append(ray_cluster.get(handles[0].compute_score.remote(data)))
    finally:
        for w in manager.reward_loop_workers:
            ray_cluster.kill(w)
    want = expected(cli, tokenizer, full)
    assert [g["reward_score"] for g in got] == pytest.approx([w["score"] for w in want])
    assert [g["reward_extra_info"] for g in got] == [pytest.approx(w) for w in want]


def test_serve_example_in_the_managers(ray_cluster, verl_config, make_batch, tokenizer, cli, root, reward_step):
    """examples/serve/verl_reward.py, loaded by verl, against a real `referee serve`."""
    data = make_batch(SAMPLES)
    _, reward_tensor, extra = reward_step(
        config_for(verl_config, "naive", path=root / "examples" / "serve" / "verl_reward.py"), data)
    want = expected(cli, tokenizer, data, prefix="")
    assert scores_at_last_token(data, reward_tensor) == pytest.approx([w["score"] for w in want])
    for key, w_key in [(k, k) for k in want[0]]:
        assert extra[key].tolist() == pytest.approx([w[w_key] for w in want]), key
    assert extra["status"].tolist() == ["ok", "ok", "ok", "error"]
    assert extra["reason"].tolist()[3] == "unparseable_gold"


class Judge(BaseHTTPRequestHandler):
    """An OpenAI-compatible server on loopback where verl's router would be (a vLLM/SGLang
    reward model behind it): 1 when the answer holds the reference."""

    calls: list = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Judge.calls.append((self.path, body))
        text = body["messages"][-1]["content"]
        ref = text.split("Reference: ")[1].split("\n")[0]
        result = 1 if ref in text.split("Answer:")[-1] else 0
        data = json.dumps({
            "id": "x", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": json.dumps({"steps": [], "result": result})}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_reward_router_address_is_the_judge(verl_config, make_batch, tokenizer_dir):
    """A worker built as RewardLoopManager builds it when a reward model runs: with the router's
    `host:port` and the reward model's tokenizer (reward.reward_model.enable). The spec has no
    `judges:`, so the router is its judge, with the reward model's path as the model name."""
    from verl.experimental.reward_loop import RewardLoopWorker

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        Judge.calls.clear()
        config = verl_config(
            "reward.reward_manager.name=naive",
            f"reward.custom_reward_function.path={rv.__file__}",
            "reward.custom_reward_function.name=compute_score_async",
            f"+reward.custom_reward_function.reward_kwargs.spec={SPECS / 'judged.yaml'}",
            "reward.reward_model.enable=true",
            f"reward.reward_model.model_path={tokenizer_dir}",
        )
        worker = RewardLoopWorker(config, reward_router_address=f"127.0.0.1:{srv.server_address[1]}")
        out = worker.loop.run_until_complete(worker.compute_score_batch(make_batch(SAMPLES[:2])))
    finally:
        srv.shutdown()
    assert [o["reward_score"] for o in out] == [1.0, 0.0]
    assert [o["reward_extra_info"]["referee/judge"] for o in out] == [1.0, 0.0]
    assert {path for path, _ in Judge.calls} == {"/v1/chat/completions"}
    assert {body["model"] for _, body in Judge.calls} == {str(tokenizer_dir)}


def test_serve_example_keys_when_the_first_row_does_not_map(referee_serve, root, monkeypatch):
    """A fresh process whose first row never becomes a sample still returns the spec's keys
    (the example probes the server for the component names)."""
    import importlib.util

    monkeypatch.setenv("REFEREE_URL", referee_serve)
    spec = importlib.util.spec_from_file_location(
        "verl_reward_fresh", root / "examples" / "serve" / "verl_reward.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    bad = mod.compute_score("a", None, "1", {"num_turns": np.int32(2)})
    good = mod.compute_score("a", "\\boxed{1}", "1", {"num_turns": np.int32(2)})
    assert set(bad) == set(good) and bad["referee_error"] == 1.0 and bad["correct/valid"] == 0.0
    assert good["score"] == 1.0 and good["correct"] == 1.0
