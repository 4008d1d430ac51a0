"""A `/v1/completions` server in vLLM's response shape over a transformers causal LM: the real
endpoint the `likelihood` reward asks for prompt logprobs, without a GPU or vLLM.

    python server.py --model-dir DIR --served-name NAME [--delay-ms MS]

prints one JSON line ``{"port": N, "base_url": "http://127.0.0.1:N/v1"}`` once it listens on
127.0.0.1 (port chosen by the OS). The logprobs are the model's own (float32, eval, no_grad,
``log_softmax`` of the raw logits: vLLM's default ``raw_logprobs``), each prompt run alone so a
batch never changes a value. The reply follows vLLM's OpenAI server (serving_completion.py
``request_output_to_completion_response`` / ``_create_completion_logprobs``, v1
``LogprobsProcessor``), as of the releases whose token strings are each id decoded alone
(``tokenizer.decode([id])``): a SentencePiece token loses its leading space, half a UTF-8
character is U+FFFD, and ``text_offset`` adds up those strings' lengths. Those quirks are the
point: a client that trusts the strings to spell the text is wrong on real vLLM.

Besides the OpenAI routes: ``GET /health``, ``GET /stats`` (``{"requests", "prompts",
"largest_batch"}``: completion requests and prompts received, so tests can tell that a cache
or the trainer's own logprobs saved a call) and ``POST /reset`` (zeroes them). ``--delay-ms``
holds each completion reply that long (tests kill the server while a request is in flight).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

# vLLM's default `--max-logprobs`: more top logprobs than this is a 400.
MAX_LOGPROBS = 20
# Bounds on what one request may ask, so a hostile body cannot tie the server up.
MAX_BODY_BYTES = 8 << 20
MAX_PROMPTS = 256
MAX_GENERATED = 64
# vLLM clamps -inf logprobs to this JSON-safe floor.
LOGPROB_FLOOR = -9999.0


class BadRequest(Exception):
    """A 400 (or ``status``) with vLLM's error body."""

    def __init__(self, message: str, status: int = 400, kind: str = "BadRequestError"):
        super().__init__(message)
        self.status = status
        self.kind = kind


def error_body(message: str, kind: str, status: int) -> dict:
    # vLLM ≤ 0.10's ErrorResponse (later releases nest the same fields under "error").
    return {"object": "error", "message": message, "type": kind, "param": None, "code": status}


class Engine:
    """The model and tokenizer, one forward pass at a time (torch on 2 cores gains nothing
    from running two at once, and the lock keeps the counters and the model consistent)."""

    def __init__(self, model_dir: str, served_name: str):
        self.tok = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.name = served_name
        self.max_model_len = int(getattr(self.model.config, "max_position_embeddings", 2048))
        self.lock = threading.Lock()
        self.stats = {"requests": 0, "prompts": 0, "largest_batch": 0}

    # -- the model ---------------------------------------------------------------------------

    @torch.no_grad()
    def logprobs(self, ids: list[int]) -> torch.Tensor:
        """``[len(ids), vocab]``: row j is the distribution after ids[:j+1]."""
        logits = self.model(torch.tensor([ids])).logits[0].float()
        return torch.log_softmax(logits, dim=-1)

    def decode_one(self, token_id: int) -> str:
        """A token's string as vLLM's ``convert_ids_list_to_tokens`` gives it: the id alone."""
        return self.tok.decode([token_id])

    def position(self, row: torch.Tensor, actual: int, k: int) -> dict[int, dict]:
        """One position's ``{id: {logprob, rank, decoded_token}}`` as vLLM builds it: the actual
        token first (rank: how many vocabulary entries are at least as likely), then the top
        k with ranks 1..k; an actual token among the top k is overwritten in place."""
        actual_lp = row[actual]
        entries = [(actual, float(actual_lp), int((row >= actual_lp).sum()))]
        if k > 0:
            vals, idx = torch.topk(row, k)
            entries += [(int(i), float(v), r + 1) for r, (v, i) in enumerate(zip(vals, idx))]
        out: dict[int, dict] = {}
        for tid, lp, rank in entries:
            out[tid] = {
                "logprob": max(lp, LOGPROB_FLOOR), "rank": rank,
                "decoded_token": self.decode_one(tid),
            }
        return out

    @torch.no_grad()
    def generate(self, ids: list[int], max_tokens: int, temperature: float,
                 seed: Optional[int], k: Optional[int]) -> tuple[list[int], list[dict], str]:
        """Tokens after the prompt: greedy at temperature 0, else sampled (seeded). Returns the
        tokens, their per-position logprob dicts (when ``k`` is given) and the finish reason."""
        gen = torch.Generator().manual_seed(0 if seed is None else seed)
        seq, out, tops = list(ids), [], []
        eos = self.tok.eos_token_id
        for _ in range(max_tokens):
            row = torch.log_softmax(self.model(torch.tensor([seq])).logits[0, -1].float(), -1)
            if temperature == 0:
                nxt = int(torch.argmax(row))
            else:
                probs = torch.softmax(row / temperature, -1)
                nxt = int(torch.multinomial(probs, 1, generator=gen))
            if k is not None:
                tops.append(self.position(row, nxt, k))
            out.append(nxt)
            seq.append(nxt)
            if nxt == eos:
                return out, tops, "stop"
        return out, tops, "length"

    # -- the request -------------------------------------------------------------------------

    def completions(self, body: Any) -> dict:
        req = parse_request(body, self.name)
        prompts = req["prompts"]
        self.stats["prompts"] += len(prompts)
        self.stats["largest_batch"] = max(self.stats["largest_batch"], len(prompts))
        echo, k, pk = req["echo"], req["logprobs"], req["prompt_logprobs"]
        max_tokens = req["max_tokens"]
        if max_tokens == 0 and not echo:
            # Only echo without generation turns 0 into vLLM's internal 1; otherwise
            # SamplingParams refuses it.
            raise BadRequest("max_tokens must be at least 1, got 0.")
        # vLLM asks the engine for prompt logprobs when echo wants logprobs.
        if pk is None and echo:
            pk = k
        encoded = []
        for p in prompts:
            if isinstance(p, str):
                ids, text = self.tok(p)["input_ids"], p
            else:
                ids, text = list(p), self.tok.decode(p)
            if not ids:
                raise BadRequest("The prompt is empty after tokenization.")
            if any(i < 0 or i >= len(self.tok) for i in ids):
                raise BadRequest(f"Token id out of vocabulary (size {len(self.tok)}).")
            total = len(ids) + max(max_tokens, 1)
            if total > self.max_model_len:
                raise BadRequest(
                    f"This model's maximum context length is {self.max_model_len} tokens. "
                    f"However, you requested {total} tokens ({len(ids)} in the messages, "
                    f"{max(max_tokens, 1)} in the completion). Please reduce the length of the "
                    "messages or completion."
                )
            encoded.append((ids, text))
        choices, n_prompt, n_gen = [], 0, 0
        for ids, text in encoded:
            prompt_lps: Optional[list] = None
            if pk is not None:
                rows = self.logprobs(ids)
                prompt_lps = [None] + [self.position(rows[j - 1], ids[j], pk)
                                       for j in range(1, len(ids))]
            # Echo without generation still runs one step inside vLLM (max_tokens 1): it
            # counts in usage, but neither its text nor its logprobs are returned.
            steps = 1 if (echo and max_tokens == 0) else max_tokens
            gen_ids, gen_lps, finish = self.generate(
                ids, steps, req["temperature"], req["seed"], k)
            shown_ids = [] if (echo and max_tokens == 0) else gen_ids
            shown_lps = [] if (echo and max_tokens == 0) else gen_lps
            gen_text = self.tok.decode(shown_ids, skip_special_tokens=True)
            if echo:
                token_ids, out_lps, out_text = ids + shown_ids, (prompt_lps or []) + shown_lps, text + gen_text
            else:
                token_ids, out_lps, out_text = shown_ids, shown_lps, gen_text
            choices.append({
                "index": len(choices),
                "text": out_text,
                "logprobs": None if k is None else self.completion_logprobs(token_ids, out_lps, k),
                "finish_reason": finish,
                "stop_reason": None,
                "token_ids": gen_ids if req["return_token_ids"] else None,
                "prompt_logprobs": None if prompt_lps is None else [
                    None if d is None else {str(t): v for t, v in d.items()} for d in prompt_lps
                ],
                "prompt_token_ids": ids if req["return_token_ids"] else None,
            })
            n_prompt += len(ids)
            n_gen += len(gen_ids)
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": choices,
            "service_tier": None,
            "system_fingerprint": None,
            "usage": {"prompt_tokens": n_prompt, "total_tokens": n_prompt + n_gen,
                      "completion_tokens": n_gen, "prompt_tokens_details": None},
            "kv_transfer_params": None,
        }

    def completion_logprobs(self, token_ids: list[int], lps: list[Optional[dict]], k: int) -> dict:
        """vLLM's ``_create_completion_logprobs``: a position without logprobs (the first
        prompt token) gets ``decode(id)`` and nulls; the others their dict's decoded token, and
        the dict's first k+1 entries keyed by decoded token (later equal strings win)."""
        tokens, token_lps, tops, offsets = [], [], [], []
        last_len = 0
        for i, tid in enumerate(token_ids):
            step = lps[i]
            if step is None:
                token = self.tok.decode(tid)
                tokens.append(token)
                token_lps.append(None)
                tops.append(None)
            else:
                entry = step[tid]
                token = entry["decoded_token"]
                tokens.append(token)
                token_lps.append(max(entry["logprob"], LOGPROB_FLOOR))
                tops.append({
                    e["decoded_token"]: max(e["logprob"], LOGPROB_FLOOR)
                    for j, e in enumerate(step.values()) if k >= j
                })
            offsets.append(0 if not offsets else offsets[-1] + last_len)
            last_len = len(token)
        return {"text_offset": offsets, "token_logprobs": token_lps, "tokens": tokens,
                "top_logprobs": tops}


def _int(body: dict, key: str, default: Optional[int], lo: int, hi: Optional[int] = None) -> Optional[int]:
    v = body.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest(f"`{key}` must be an integer, got {v!r}.")
    if v < lo or (hi is not None and v > hi):
        raise BadRequest(f"`{key}` must be between {lo} and {hi}, got {v}." if hi is not None
                         else f"`{key}` must be at least {lo}, got {v}.")
    return v


def parse_request(body: Any, served: str) -> dict:
    """The fields this server reads, validated as vLLM validates them (400 on a bad body, 404
    on another model's name); unknown fields are ignored, as pydantic's extra fields are."""
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    model = body.get("model")
    if model is not None and model != served:
        raise BadRequest(f"The model `{model}` does not exist.", 404, "NotFoundError")
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        prompts: list = [prompt]
    elif isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        prompts = list(prompt)
    elif isinstance(prompt, list) and prompt and all(isinstance(p, int) and not isinstance(p, bool) for p in prompt):
        prompts = [prompt]
    elif (isinstance(prompt, list) and prompt and all(
            isinstance(p, list) and p and all(isinstance(t, int) and not isinstance(t, bool) for t in p)
            for p in prompt)):
        prompts = list(prompt)
    else:
        raise BadRequest("Either prompt or prompt_embeds must be provided and non-empty.")
    if any(p == "" for p in prompts):
        raise BadRequest("Either prompt or prompt_embeds must be provided and non-empty.")
    if len(prompts) > MAX_PROMPTS:
        raise BadRequest(f"At most {MAX_PROMPTS} prompts in one request here.")
    echo = body.get("echo", False)
    if echo is None:
        echo = False
    if not isinstance(echo, bool):
        raise BadRequest(f"`echo` must be a boolean, got {echo!r}.")
    if body.get("stream"):
        raise BadRequest("This test server does not stream.")
    if body.get("n", 1) not in (1, None):
        raise BadRequest("This test server serves n = 1 only.")
    logprobs = _int(body, "logprobs", None, 0, MAX_LOGPROBS)
    prompt_logprobs = body.get("prompt_logprobs")
    if prompt_logprobs is not None:
        if isinstance(prompt_logprobs, bool) or not isinstance(prompt_logprobs, int) or prompt_logprobs < 0:
            raise BadRequest("`prompt_logprobs` must be a positive value or -1.")
        if prompt_logprobs > MAX_LOGPROBS:
            raise BadRequest(f"Requested prompt logprobs of {prompt_logprobs}, which is greater "
                             f"than max allowed: {MAX_LOGPROBS}")
    max_tokens = _int(body, "max_tokens", 16, 0, MAX_GENERATED)
    temperature = body.get("temperature")
    if temperature is None:
        temperature = 1.0
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or temperature < 0:
        raise BadRequest(f"temperature must be non-negative, got {temperature!r}.")
    seed = _int(body, "seed", None, -(1 << 63), (1 << 63) - 1)
    rti = body.get("return_token_ids")
    return {"prompts": prompts, "echo": echo, "logprobs": logprobs,
            "prompt_logprobs": prompt_logprobs, "max_tokens": max_tokens,
            "temperature": float(temperature), "seed": seed,
            "return_token_ids": bool(rti)}


def make_handler(engine: Engine, delay_s: float):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet: tests read stdout for the port line only
            pass

        def reply(self, status: int, body: Any):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/v1/models":
                self.reply(200, {"object": "list", "data": [{
                    "id": engine.name, "object": "model", "created": int(time.time()),
                    "owned_by": "vllm", "root": engine.name, "parent": None,
                    "max_model_len": engine.max_model_len,
                }]})
            elif self.path == "/stats":
                with engine.lock:
                    self.reply(200, dict(engine.stats))
            else:
                self.reply(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self.reply(400, error_body("The request body is too large.", "BadRequestError", 400))
                self.close_connection = True
                return
            raw = self.rfile.read(length)
            if self.path == "/reset":
                with engine.lock:
                    engine.stats = {"requests": 0, "prompts": 0, "largest_batch": 0}
                self.reply(200, {})
                return
            if self.path != "/v1/completions":
                self.reply(404, {"detail": "Not Found"})
                return
            with engine.lock:
                engine.stats["requests"] += 1
                try:
                    try:
                        body = json.loads(raw)
                    except ValueError as e:
                        raise BadRequest(f"JSON decode error: {e}") from None
                    status, out = 200, engine.completions(body)
                except BadRequest as e:
                    status, out = e.status, error_body(str(e), e.kind, e.status)
            if delay_s:
                time.sleep(delay_s)
            self.reply(status, out)

    return Handler


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--served-name", required=True)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    engine = Engine(args.model_dir, args.served_name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(engine, args.delay_ms / 1000))
    server.daemon_threads = True
    port = server.server_address[1]
    print(json.dumps({"port": port, "base_url": f"http://127.0.0.1:{port}/v1"}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
