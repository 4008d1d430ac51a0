#!/usr/bin/env python3
"""A misbehaving OpenAI-compatible endpoint for the judge fault tests (stdlib only).

    python3 scripts/fault_server.py --mode MODE [--port 0] [--delay 0.0] [--content TEXT]

Prints one JSON line `{"pid": ..., "port": ..., "base_url": "http://127.0.0.1:PORT/v1"}` once it
listens on 127.0.0.1, then serves until killed. Every `POST .../chat/completions` is answered
according to MODE:

- `ok`: a well-formed chat completion whose content is `--content`, after `--delay` seconds;
- `stall`: reads the request and never answers (the connection stays open);
- `500`: HTTP 500 with an OpenAI-style error body;
- `garbage`: HTTP 200 with a body that is not JSON (`{"choices": [` cut off);
- `prose`: a well-formed completion whose content is prose, not the verdict JSON asked for;
- `prm`: a process reward model in vLLM's `/pooling` shape (Qwen2.5-Math-PRM served with
  `task: token_classify`): each input is cut at its `<extra_0>` tags and each step before a tag
  gets one `[p_wrong, p_right]` row. The score is deterministic and checks the step's
  arithmetic: a step with a false `a op b = c` (`+ - * x ×`) gets 0.05, a step with no digit
  at all (filler) 0.8, any other 0.95. `--delay` holds every reply. The same mode serves
  Math-Shepherd's route, `POST .../completions` with `echo` + `logprobs` (one choice per
  prompt): the prompt is tokenised as `<s>` then runs of whitespace glued to the word after them
  (so `" ки"` is one token), one generated token `" +"` is appended, and the position after each
  `ки` token carries `{" +": ln p, " -": ln(1 - p)}` (plus filler keys up to `logprobs`) for the
  step before it, scored as above; every other position holds only its own token (vLLM would
  send `logprobs` keys at every position: these bodies are smaller than a real server's).
- `listwise`: a listwise judge (`group.listwise`, `tie_break: {mode: listwise}`), after
  `--delay` seconds: a request whose `response_format` schema asks for a `ranking` gets the
  responses (read from the prompt: `Response <id>:` then a `<candidate_response>` section) best
  first, where better means more digits, then longer, then shown earlier; one asking for
  `scores` gets `min(10, digits)` per response. Any other request gets `--content` (so
  `score_model` specs are judged by the same server).
- `rm`: a reward-model server: `POST /pooling` and `/classify` (vLLM's shapes) and
  `/get_reward` (OpenRLHF's) score each text as r = (number of characters % 10) / 10, returned
  as pooling `data: [r, -r]`, classify `probs: [1 - r, r]`, OpenRLHF `rewards: [r]`.

- `vision`: a strict vision judge. Every chat request is checked like a vision server checks it:
  a message's `content` is a string or a list of parts, each exactly `{type: text, text}`,
  `{type: image_url, image_url: {url, detail?}}` (detail low/high/auto; the url an inline
  `data:image/png;base64,...` PNG, the only kind served here) or `{type: input_audio,
  input_audio: {data, format: wav|mp3}}`, and parts only in `user` messages; anything else is
  an HTTP 400 saying what is wrong. The PNGs are decoded (8-bit RGB/RGBA, every filter) and
  each one's dominant colour named (red, green, blue, white, black, ...). The verdict: the
  candidate's text (between `<candidate_response>` tags) names the colour of every image. It is
  written in the shape the request's `response_format` schema asks: `result` 1/0 for a number,
  the enum's first/last value for labels, with `steps` when they are required.

- `noisy`: a noisy judge for `samples:` and `ensemble`, after `--delay` seconds. The verdict on
  the candidate (between `<candidate_response>` tags) is a coin whose chance of passing is 0.8
  when the candidate holds a digit and 0.2 when it holds none, flipped deterministically from a
  hash of the candidate, the request's `seed` and the choice's index; a request with `n` gets
  `n` choices. The verdict is written in the shape the `response_format` schema asks (as in
  `vision`).

- `rubric`: a rubric writer and a rubric grader (`rubric` with `criteria: {generate}`), after
  `--delay` seconds. A writer request (its system message says "You write grading rubrics")
  gets criteria written from the user message's `Reference answer:` (RaR or ProRubric, as the
  request's schema asks): "States that the answer is REF." (essential, 5), "Shows the working
  that leads to the answer." (important, 3), "Gives more than one final answer." (pitfall, -1);
  with no reference, only the last two. A grading request (`verdicts` in its schema) gets a
  verdict per listed criterion `[id] ...`, read off the candidate's text (between
  `<candidate_response>` tags in the user message): the answer criterion holds when REF is in
  it, the working one when it has `=` or "because", the pitfall when it has " or "; any other
  criterion is false. Writer requests are also counted apart (`writes` in `/stats`).

`GET /stats` returns `{"requests": N, "batches": [sizes], "writes": W}` (requests served; texts
per reward-model request; rubric-writer requests). `POST /reset` zeroes them; `POST /reset?record=1` also starts keeping
every request body, which `GET /recorded` returns as `[{"path": ..., "body": "the body's text"}]` (the
PRM bench replays them with a raw client).
"""
import argparse
import base64
import json
import math
import os
import re
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COUNT = 0
WRITES = 0
BATCHES = []
RECORDED = None  # a list of (path, raw body) once `/reset?record=1`
LOCK = threading.Lock()


def completion(content):
    return {
        "id": "fault-1",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fault",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def decode_png(data):
    """The pixels of an 8-bit RGB or RGBA PNG, as (r, g, b) tuples."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("no PNG signature")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, chunk = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", chunk[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError("only 8-bit RGB or RGBA")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    if w is None:
        raise ValueError("no IHDR")
    raw, stride, prev, px = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        px += [tuple(line[i:i + 3]) for i in range(0, stride, bpp)]
        prev = line
    return px


def colour(px):
    """The name of the mean colour."""
    r, g, b = (sum(p[i] for p in px) / len(px) for i in range(3))
    names = {"red": (255, 0, 0), "green": (0, 128, 0), "blue": (0, 0, 255), "white": (255, 255, 255),
             "black": (0, 0, 0), "yellow": (255, 255, 0), "gray": (128, 128, 128)}
    return min(names, key=lambda k: sum((x - y) ** 2 for x, y in zip((r, g, b), names[k])))


def handler(args):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, code, body: bytes, ctype="application/json"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/stats":
                self.reply(200, json.dumps({"requests": COUNT, "batches": BATCHES, "writes": WRITES}).encode())
            elif self.path == "/recorded":
                with LOCK:
                    rec = list(RECORDED or [])
                self.reply(200, json.dumps([{"path": p, "body": r.decode()} for p, r in rec]).encode())
            else:
                self.reply(200, b'{"status": "ok"}')

        def do_POST(self):
            global COUNT, BATCHES, RECORDED, WRITES
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n)
            if self.path.startswith("/reset"):
                with LOCK:
                    COUNT, BATCHES, WRITES = 0, [], 0
                    RECORDED = [] if "record=1" in self.path else None
                return self.reply(200, b'{"status": "ok"}')
            with LOCK:
                COUNT += 1
                if RECORDED is not None:
                    RECORDED.append((self.path, raw))
            if args.mode == "rm":
                return self.reward_model(json.loads(raw))
            if args.mode == "prm":
                return self.process_reward_model(json.loads(raw))
            if args.mode == "vision":
                return self.vision(json.loads(raw))
            if args.mode == "noisy":
                if args.delay:
                    time.sleep(args.delay)
                return self.reply(200, json.dumps(noisy(json.loads(raw))).encode())
            if args.mode == "stall":
                time.sleep(3600)
                return
            if args.delay:
                time.sleep(args.delay)
            if args.mode == "rubric":
                body = json.loads(raw)
                reply, wrote = rubric(body)
                if wrote:
                    with LOCK:
                        WRITES += 1
                return self.reply(200, json.dumps(completion(reply)).encode())
            if args.mode == "500":
                self.reply(500, json.dumps({"error": {"message": "internal error", "type": "server_error"}}).encode())
            elif args.mode == "garbage":
                self.reply(200, b'{"choices": [')
            elif args.mode == "listwise":
                self.reply(200, json.dumps(completion(listwise(json.loads(raw), args.content))).encode())
            elif args.mode == "prose":
                self.reply(200, json.dumps(completion("The answer looks good to me, I would give it a high score.")).encode())
            else:
                self.reply(200, json.dumps(completion(args.content)).encode())

        def vision(self, body):
            errs, colours, texts = [], [], []
            for i, m in enumerate(body.get("messages") or []):
                c = m.get("content")
                if isinstance(c, str):
                    if m.get("role") == "user":
                        texts.append(c)
                    continue
                if not isinstance(c, list):
                    errs.append(f"messages[{i}].content: a string or a list of parts")
                    continue
                if m.get("role") != "user":
                    errs.append(f"messages[{i}]: content parts are accepted in user messages only")
                for j, p in enumerate(c):
                    at = f"messages[{i}].content[{j}]"
                    t = p.get("type") if isinstance(p, dict) else None
                    if t == "text" and set(p) == {"type", "text"} and isinstance(p["text"], str):
                        texts.append(p["text"])
                    elif t == "image_url" and set(p) == {"type", "image_url"} and isinstance(p["image_url"], dict):
                        img = p["image_url"]
                        url = img.get("url")
                        if set(img) - {"url", "detail"} or img.get("detail", "auto") not in ("low", "high", "auto"):
                            errs.append(f"{at}.image_url: only url and detail (low, high, auto)")
                        elif not isinstance(url, str) or not url.startswith("data:image/png;base64,"):
                            errs.append(f"{at}: only inline PNG data URIs are served here, got {str(url)[:40]!r}")
                        else:
                            try:
                                colours.append(colour(decode_png(base64.b64decode(url.split(",", 1)[1], validate=True))))
                            except Exception as e:  # noqa: BLE001 - the client sent bad bytes
                                errs.append(f"{at}: not a PNG ({e})")
                    elif t == "input_audio" and set(p) == {"type", "input_audio"}:
                        a = p["input_audio"]
                        if not (isinstance(a, dict) and set(a) == {"data", "format"} and a["format"] in ("wav", "mp3")):
                            errs.append(f"{at}.input_audio: exactly data and format (wav, mp3)")
                        else:
                            try:
                                base64.b64decode(a["data"], validate=True)
                            except Exception:  # noqa: BLE001
                                errs.append(f"{at}.input_audio.data: not base64")
                    else:
                        errs.append(f"{at}: unknown part {json.dumps(p)[:80]}")
            if errs:
                return self.reply(400, json.dumps({"error": {"message": "; ".join(errs), "type": "invalid_request_error"}}).encode())
            # The system notice names the tags too: the candidate is in the user's text.
            text = "\n".join(texts)
            cand = re.search(r"<candidate_response>(.*?)</candidate_response>", text, re.S)
            said = (cand.group(1) if cand else "").lower()
            ok = bool(colours) and all(re.search(rf"\b{c}\b", said) for c in colours)
            schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
            result = (schema.get("properties") or {}).get("result") or {}
            verdict = {"result": (result["enum"][0] if ok else result["enum"][-1]) if "enum" in result else (1 if ok else 0)}
            if "steps" in (schema.get("required") or []):
                verdict = {"steps": [{"description": f"the images are {', '.join(colours)}", "conclusion": "match" if ok else "mismatch"}], **verdict}
            self.reply(200, json.dumps(completion(json.dumps(verdict))).encode())

        def reward_model(self, body):
            texts = body.get("query") if self.path.endswith("/get_reward") else body.get("input")
            with LOCK:
                BATCHES.append(len(texts))
            if args.delay:
                time.sleep(args.delay)
            rs = [(len(t) % 10) / 10 for t in texts]
            if self.path.endswith("/pooling"):
                out = {"object": "list", "data": [{"index": i, "object": "pooling", "data": [r, -r]} for i, r in enumerate(rs)]}
            elif self.path.endswith("/classify"):
                out = {"object": "list", "data": [{"index": i, "label": "1", "probs": [1 - r, r], "num_classes": 2} for i, r in enumerate(rs)]}
            elif self.path.endswith("/get_reward"):
                out = {"rewards": rs}
            else:
                return self.reply(404, b'{"error": "not found"}')
            self.reply(200, json.dumps(out).encode())

        def process_reward_model(self, body):
            if self.path.endswith("/completions"):
                return self.math_shepherd(body)
            if not self.path.endswith("/pooling"):
                return self.reply(404, b'{"error": "not found"}')
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            with LOCK:
                BATCHES.append(len(texts))
            if args.delay:
                time.sleep(args.delay)
            data = []
            for i, t in enumerate(texts):
                steps = t.split("<extra_0>")[:-1]  # the text after the last tag is not a step
                data.append({"index": i, "object": "pooling",
                             "data": [[1 - p, p] for p in (step_score(s) for s in steps)]})
            n = sum(len(t) for t in texts)
            self.reply(200, json.dumps({
                "id": "pool-fault", "object": "list", "created": int(time.time()), "model": body.get("model"),
                "data": data, "usage": {"prompt_tokens": n, "total_tokens": n, "completion_tokens": 0},
            }).encode())

        def math_shepherd(self, body):
            prompts = body.get("prompt")
            prompts = [prompts] if isinstance(prompts, str) else prompts
            k = int(body.get("logprobs") or 0)
            with LOCK:
                BATCHES.append(len(prompts))
            if args.delay:
                time.sleep(args.delay)
            choices = [{"index": i, "text": t + " +", "finish_reason": "length", "logprobs": shepherd_logprobs(t, k)}
                       for i, t in enumerate(prompts)]
            n = sum(len(t) for t in prompts)
            self.reply(200, json.dumps({
                "id": "cmpl-fault", "object": "text_completion", "created": int(time.time()), "model": body.get("model"),
                "choices": choices, "usage": {"prompt_tokens": n, "completion_tokens": len(prompts), "total_tokens": n},
            }).encode())

    return H


SECTION = re.compile(r"Response (\w+):\n<candidate_response>\n(.*?)\n</candidate_response>", re.S)


def shaped(body: dict, ok: bool) -> str:
    """A pass or fail verdict in the shape the request's `response_format` schema asks."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    result = (schema.get("properties") or {}).get("result") or {}
    verdict = {"result": (result["enum"][0] if ok else result["enum"][-1]) if "enum" in result else (1 if ok else 0)}
    if "steps" in (schema.get("required") or []):
        verdict = {"steps": [{"description": "checked", "conclusion": "pass" if ok else "fail"}], **verdict}
    return json.dumps(verdict)


def noisy(body: dict) -> dict:
    """The `noisy` mode's reply (see the module doc)."""
    import hashlib
    # The system notice names the tags too: the candidate is in the user's text.
    text = "\n".join(m["content"] for m in body.get("messages") or []
                     if m.get("role") == "user" and isinstance(m.get("content"), str))
    cand = re.search(r"<candidate_response>(.*?)</candidate_response>", text, re.S)
    said = cand.group(1) if cand else ""
    digit = bool(re.search(r"\d", said))
    n = int(body.get("n") or 1)
    choices = []
    for i in range(n):
        h = hashlib.sha256(f"{said}|{body.get('seed')}|{i}".encode()).digest()
        coin = h[0] / 256
        ok = coin < (0.8 if digit else 0.2)
        choices.append({"index": i, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": shaped(body, ok)}})
    out = completion("")
    out["choices"] = choices
    out["usage"]["completion_tokens"] = 5 * n
    return out


def listwise(body: dict, default: str) -> str:
    """The `listwise` mode's reply to one chat request (see the module doc)."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    props = schema.get("properties") or {}
    prompt = "\n".join(m.get("content") or "" for m in body.get("messages") or [] if isinstance(m.get("content"), str))
    shown = SECTION.findall(prompt)
    digits = lambda t: sum(c.isdigit() for c in t)
    if "ranking" in props:
        order = sorted(range(len(shown)), key=lambda i: (-digits(shown[i][1]), -len(shown[i][1]), i))
        return json.dumps({"ranking": [shown[i][0] for i in order]})
    if "scores" in props:
        return json.dumps({"scores": [{"id": i, "score": min(10, digits(t))} for i, t in shown]})
    return default


CRITERION = re.compile(r"^\[(\d+)\] (?:\((?:penalty|failure condition)\) )?(?:[^:\n]*: )?(.*)$", re.M)


def rubric(body: dict):
    """The `rubric` mode's reply to one chat request (see the module doc), and whether it wrote."""
    msgs = [m for m in body.get("messages") or [] if isinstance(m.get("content"), str)]
    system = "\n".join(m["content"] for m in msgs if m.get("role") == "system")
    user = "\n".join(m["content"] for m in msgs if m.get("role") == "user")
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    if "You write grading rubrics" in system:
        ref = re.search(r"\n\nReference answer:\n(.*)\Z", user, re.S)
        rows = [("Working", "Important", "Shows the working that leads to the answer.", 3),
                ("One answer", "Pitfall", "Gives more than one final answer.", -1)]
        if ref:
            rows.insert(0, ("Answer", "Essential", f"States that the answer is {ref.group(1).strip()}.", 5))
        item = ((schema.get("properties") or {}).get("criteria") or {}).get("items") or {}
        if "criterion" in (item.get("properties") or {}):
            crit = [{"criterion": t, "weight": w} for _, _, t, w in rows]
        else:
            crit = [{"title": n, "description": f"{c} Criteria: {t}", "weight": w} for n, c, t, w in rows]
        return json.dumps({"criteria": crit}), True
    cand = re.search(r"<candidate_response>(.*?)</candidate_response>", user, re.S)
    said = (cand.group(1) if cand else "").lower()
    listed = user.split("\n\nCriteria:", 1)[-1]
    verdicts = []
    for i, text in CRITERION.findall(listed):
        answer = re.match(r"States that the answer is (.*)\.$", text)
        if answer:
            v = answer.group(1).lower() in said
        elif text.startswith("Shows the working"):
            v = "=" in said or "because" in said
        elif text.startswith("Gives more than one final answer"):
            v = " or " in said
        else:
            v = False
        verdicts.append({"id": int(i), "reason": "read off the response", "verdict": v})
    return json.dumps({"verdicts": verdicts}), False


TOKEN = re.compile(r"\s*\S+|\s+")


def shepherd_logprobs(text: str, k: int) -> dict:
    """Echoed `logprobs` for one prompt (see the module doc): tokens, offsets, top-k."""
    tokens = ["<s>"] + TOKEN.findall(text) + [" +"]
    top, step = [None], []
    for j in range(1, len(tokens)):
        prev = tokens[j - 1]
        if prev.strip() == "ки":
            p = step_score("".join(step))
            d = {" +": math.log(p), " -": math.log(1 - p)}
            for f in range(max(k - 2, 0)):
                d[f" x{f}"] = -9.0
            top.append(d)
            step = []
        else:
            if j > 1:
                step.append(prev)
            top.append({tokens[j]: -0.5})
    offsets, at = [], 0
    for t in tokens[1:]:
        offsets.append(at)
        at += len(t)
    return {"tokens": tokens, "text_offset": [0] + offsets, "token_logprobs": [None] * len(tokens), "top_logprobs": top}


EQUATION = re.compile(r"(-?\d+)\s*([-+*x×])\s*(-?\d+)\s*=\s*(-?\d+)")


def step_score(step: str) -> float:
    """The deterministic PRM's score of one step (see the module doc)."""
    for a, op, b, c in EQUATION.findall(step):
        a, b, c = int(a), int(b), int(c)
        value = a + b if op == "+" else a - b if op == "-" else a * b
        if value != c:
            return 0.05
    return 0.95 if any(ch.isdigit() for ch in step) else 0.8


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["ok", "stall", "500", "garbage", "prose", "listwise", "rm", "prm", "vision", "noisy", "rubric"], required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--content", default='{"result": 1}')
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), handler(args))
    srv.daemon_threads = True
    port = srv.server_address[1]
    print(json.dumps({"pid": os.getpid(), "port": port, "base_url": f"http://127.0.0.1:{port}/v1"}), flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
