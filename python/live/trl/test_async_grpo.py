"""The single-function mode in ``trl.experimental.async_grpo``, which sums its reward functions
without weights and passes neither ``log_extra`` nor ``log_metric``.

``AsyncGRPOTrainer`` itself needs vLLM (its worker refuses to start without the package, and the
trainer syncs weights into a vLLM server), which does not run on this CPU. So this test runs the
rollout loop that does the scoring, TRL's own ``_AsyncRolloutLoop`` (the process the trainer
spawns), in a thread, unchanged: it renders prompts, requests completions, parses them with the
tokenizer's response template, calls the reward functions and computes rewards and advantages;
its arguments (reward functions, tokenizer, dataset) go through pickle as they do to the spawned
process, and TRL's own child entry point (``_child_main``) runs it. The one thing standing in is vLLM's ``/v1/completions``: a
loopback server that answers with the fixed completions' token ids."""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import pickle
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from datasets import Dataset
from trl.experimental.async_grpo.async_rollout_worker import _AsyncRolloutLoop, _child_main

import referee.trl

ADD = "Write a program that prints the sum of two integers."
TOOL = "Call the add tool on 1 and 2."


def completions_server(tok, completions, end):
    """vLLM's ``/v1/completions`` with ``return_token_ids``: each prompt's fixed completions in
    turn."""
    turn = {k: 0 for k in completions}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            text = tok.decode(body["prompt"])
            (key,) = [k for k in completions if k in text]
            with lock:
                completion = completions[key][turn[key] % len(completions[key])]
                turn[key] += 1
            ids = tok(completion + end, add_special_tokens=False)["input_ids"]
            out = json.dumps({"choices": [{"token_ids": ids,
                                           "logprobs": {"token_logprobs": [0.0] * len(ids)}}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_async_grpo_rollout_loop_single_function(live, cli, spec):
    tok = live.make_tokenizer(parse=True)
    server = completions_server(tok, live.COMPLETIONS, live.END)
    columns = {ADD: {"tests": None, "calls": "[]"},  # no gold: every reward None
               TOOL: {"tests": [{"input": "", "output": "3\n"}], "calls": live.ADD_CALL_EXPECTED}}
    dataset = Dataset.from_list(
        [{"prompt": [{"role": "user", "content": k}], **c} for k, c in columns.items()])
    buffer = queue.Queue(maxsize=8)  # two groups of four; then the loop waits
    stop = threading.Event()
    loop_kwargs = dict(
        model_name="tiny", dataset=dataset,
        reward_funcs=[referee.trl.reward_func(spec, asynchronous=True)], processing_class=tok,
        eos_token_ids=[tok.eos_token_id], num_generations=4, max_inflight_tasks=4,
        vllm_server_url=f"http://127.0.0.1:{server.server_address[1]}", max_tokens=64,
    )
    # What AsyncRolloutWorker.start does, in a thread instead of a spawned process: the loop's
    # arguments go through pickle, then TRL's child entry point runs the loop.
    child = threading.Thread(target=_child_main, daemon=True, kwargs=dict(
        loop_cls=_AsyncRolloutLoop, loop_kwargs=pickle.loads(pickle.dumps(loop_kwargs)),
        samples_queue=buffer, model_version_value=mp.Value("i", 0), stop_event=stop,
        child_ready_event=threading.Event(), heartbeat_value=mp.Value("d", 0.0),
        failed_event=threading.Event(), exception_info_queue=queue.Queue(),
        metrics_queue=queue.Queue(maxsize=4096),
    ))
    child.start()
    try:
        samples = [buffer.get(timeout=60) for _ in range(8)]
    finally:
        stop.set()
        while child.is_alive():  # drain, so that a push blocked on the full buffer sees the stop
            try:
                buffer.get(timeout=0.2)
            except queue.Empty:
                pass
            child.join(timeout=0.2)
        server.shutdown()
    by_group = {}
    for s in samples:
        by_group.setdefault(s.group_id, []).append(s)
    assert sorted(len(g) for g in by_group.values()) == [4, 4]
    for group in by_group.values():
        key = live.prompt_key(group[0].prompt)
        want = cli(spec, [{"prompt": s.prompt, "completion": s.completion, **columns[key]}
                          for s in group], "--format", "trl")
        got = [s.metrics["rewards/referee"] for s in group]
        assert live.same(got, [w["reward"] for w in want])
        assert live.same([s.metrics["reward"] for s in group], [w["reward"] for w in want])
        if key == ADD:
            assert all(math.isnan(r) for r in got)
            assert [s.advantage for s in group] == [0.0] * 4  # unscorable: no advantage
        else:
            assert max(got) > 0 and any(s.advantage != 0 for s in group)
            assert any("tool_calls" in s.completion[0] for s in group)
