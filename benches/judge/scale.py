#!/usr/bin/env python3
"""Judge-bound scoring at 1,024 calls in flight: Referee's CLI vs `openai.AsyncOpenAI`. Stdlib only
(the anchor runs in its own pinned venv).

    python3 benches/judge/scale.py [--runs 3] [--delay 1.0] [--workloads A,B]
                                   [--referee-bin PATH] [--build auto|always|never]

Every judge call is answered by benches/judge/mock_server.py exactly --delay seconds after it
arrives, so a run's wall time has a floor: delay × the calls a sample makes one after another
(one here: a rubric's calls run concurrently), ~1 s. What is measured is how close each side
gets to that floor with 1,024 calls allowed in flight, and what it costs in CPU and memory.

- Workload A: 1,024 samples, one `score_model` call each (1,024 calls).
- Workload B: 256 samples, a 4-criterion `rubric` with `per_call: 1` (4 concurrent calls per
  sample, 1,024 calls).
The endpoint has `max_concurrency: 1024`, the judge cache is off (`judge_cache: {backend:
off}`). Data and specs are written to benches/data/judge_scale/ (git-ignored), deterministically.

Sides, each a separate process spawned with subprocess and reaped with os.wait4 (wall time
from spawn to reap, user+sys CPU, peak RSS):
- `referee default`: `referee score SPEC DATA -o /dev/null --summary-json`, no env var;
- `referee in_flight=1024`: the same with REFEREE_IN_FLIGHT=1024 (today's workaround; after
  the async core the variable may mean nothing, the run still works);
- `anchor`: benches/judge/anchor.py in ~/.cache/referee/bench-judge-venv (made from
  benches/judge/requirements.txt, remade when that file's hash changes): the very request
  bodies Referee sent (recorded at the mock server in a first, checking run), through
  `openai.AsyncOpenAI` + `asyncio.gather` under `asyncio.Semaphore(1024)`.
First one untimed checking run per workload (`-o FILE`): every row must have status ok, the
server must have answered exactly the expected calls, and the bodies are recorded for the anchor.
Then --runs rounds, interleaved (anchor, referee default, referee in_flight=1024, per workload);
each timed Referee run is checked again through its summary (every row ok, the expected calls).
The server's counters are reset before every run: its peak of requests in flight is reported.
Medians over the runs; ratios against the anchor are medians of per-run ratios.

Prints the JSON, a Markdown table and the targets of the async core (wall within 25% of the
floor, <= 0.3 ms Referee CPU per judge call, peak RSS < 200 MiB) as pass/fail.
"""
import argparse
import fcntl
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "benches" / "data" / "judge_scale"
REQS = HERE / "requirements.txt"
SEED = 20261202

TARGET_WALL = 1.25     # wall <= 1.25 x floor
TARGET_CPU_MS = 0.3    # Referee CPU per judge call
TARGET_RSS_MIB = 200


# ---------------------------------------------------------------- data and specs

TOPICS = [
    ("Why does the sky look blue during the day?", "Rayleigh scattering",
     "shorter wavelengths of sunlight scatter off air molecules much more than longer ones"),
    ("How do vaccines train the immune system?", "antigen exposure",
     "a harmless piece or copy of a pathogen lets the body build antibodies and memory cells"),
    ("What causes the seasons on Earth?", "axial tilt",
     "the 23.4 degree tilt changes how directly sunlight strikes each hemisphere over the year"),
    ("Why does bread dough rise?", "yeast fermentation",
     "yeast eats sugars and releases carbon dioxide that gluten traps as bubbles"),
    ("How does a refrigerator keep food cold?", "the vapour-compression cycle",
     "a refrigerant absorbs heat as it evaporates inside and releases it as it condenses outside"),
    ("Why do we have leap years?", "the length of the solar year",
     "a year is about 365.2422 days, so a day is added almost every four years to stay in step"),
    ("What makes a rainbow appear?", "dispersion in raindrops",
     "each droplet refracts, reflects and splits sunlight into colours at about 42 degrees"),
    ("How do noise-cancelling headphones work?", "destructive interference",
     "a microphone samples ambient sound and the speaker plays an inverted copy of it"),
    ("Why is the ocean salty?", "weathering of rocks",
     "rivers carry dissolved minerals to the sea, where evaporation leaves the salts behind"),
    ("How does compound interest grow savings?", "interest on interest",
     "each period's interest is added to the principal, so later interest is computed on more"),
    ("What does a CPU cache do?", "locality of reference",
     "small fast memory near the cores keeps recently used data so most loads avoid main memory"),
    ("Why do onions make people cry?", "syn-propanethial-S-oxide",
     "cutting releases enzymes that form an irritant gas which reaches the eyes"),
]
OPENERS = ["In short,", "Briefly:", "The main reason is", "It comes down to", "Put simply,",
           "The key idea is", "Scientists explain this with", "The answer is"]
DETAILS = [
    "This effect is stronger when {n} conditions line up, which is why it varies by place and time.",
    "A common misconception is that it has a single cause; in practice about {n} factors contribute.",
    "Measurements over {n} years confirm the explanation and rule out the usual alternatives.",
    "You can see it for yourself with a simple experiment that takes about {n} minutes.",
    "Engineers rely on the same principle in at least {n} everyday devices.",
    "The textbook figure is roughly {n} percent, though it depends on the setting.",
]
CLOSERS = ["Hope this helps.", "Let me know if you want the maths behind it.", "",
           "That is the gist of it.", "A diagram makes this much easier to picture."]


def answer(rng, topic):
    q, name, why = topic
    parts = [f"{rng.choice(OPENERS)} {name}: {why}."]
    for d in rng.sample(DETAILS, rng.randint(1, 3)):
        parts.append(d.format(n=rng.randint(2, 60)))
    closer = rng.choice(CLOSERS)
    if closer:
        parts.append(closer)
    return " ".join(parts)


def gen_rows(n, prefix, seed):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        rows.append({"id": f"{prefix}{i:05d}", "prompt": topic[0], "completion": answer(rng, topic),
                     "question": topic[0]})
    return rows


RUBRIC = [
    {"title": "Names the mechanism", "description": "Essential Criteria: Names the physical, chemical or "
     "biological mechanism behind the phenomenon asked about.", "weight": 5},
    {"title": "Explains the cause", "description": "Important Criteria: Explains in one or two sentences "
     "how the mechanism produces what is observed.", "weight": 4},
    {"title": "Concrete detail", "description": "Optional Criteria: Gives a number, an example or an "
     "everyday application that makes the explanation concrete.", "weight": 2},
    {"title": "Misinformation", "description": "Pitfall Criteria: States something factually wrong about "
     "the phenomenon.", "weight": -2},
]


def spec_text(workload, base_url, concurrency, per_call):
    head = (f"# Generated by benches/judge/scale.py (workload {workload}).\n"
            f"judges:\n  default: {{base_url: \"{base_url}\", model: judge, max_concurrency: {concurrency}}}\n"
            f"judge_cache: {{backend: off}}\n")
    if workload == "A":
        return head + """grader:
  type: score_model
  name: helpfulness
  range: [1, 5]
  input:
    - role: system
      content: Rate how helpful the answer is, from 1 (useless) to 5 (excellent).
    - role: user
      content: "Question: {{item.question}}\\nAnswer: {{sample.output_text}}"
"""
    crit = "\n".join(f"    - {json.dumps(c)}" for c in RUBRIC)
    return head + f"""grader:
  type: rubric
  name: rubric
  question: "{{{{item.question}}}}"
  per_call: {per_call}
  criteria:
{crit}
"""


WORKLOADS = {
    # name: (rows, calls per sample, description)
    "A": (1024, 1, "1,024 samples x 1 `score_model` call"),
    "B": (256, 4, "256 samples x 4-criterion `rubric` (`per_call: 1`)"),
}


# ---------------------------------------------------------------- processes


def cache_dir():
    return Path(os.environ.get("REFEREE_CACHE_DIR") or Path.home() / ".cache" / "referee")


def ensure_venv():
    """The anchor's venv, made from requirements.txt; remade when that file's hash changes."""
    venv = cache_dir() / "bench-judge-venv"
    stamp = hashlib.sha256(REQS.read_bytes()).hexdigest()[:16]
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(str(venv) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        s = venv / ".stamp"
        if not (s.exists() and s.read_text().strip() == stamp):
            print(f"== anchor venv {venv} (from {REQS.relative_to(ROOT)}; once)", file=sys.stderr)
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, stdout=sys.stderr)
            pip = [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
            subprocess.run(pip + ["pip==24.3.1"], check=True, stdout=sys.stderr)
            subprocess.run(pip + ["-r", str(REQS)], check=True, stdout=sys.stderr)
            s.write_text(stamp + "\n")
    return venv / "bin" / "python"


class Mock:
    def __init__(self, delay):
        self.p = subprocess.Popen([sys.executable, str(HERE / "mock_server.py"), "--delay", str(delay)],
                                  stdout=subprocess.PIPE, text=True)
        self.info = json.loads(self.p.stdout.readline())
        self.root = self.info["base_url"][: -len("/v1")]

    def _req(self, method, path):
        r = urllib.request.Request(self.root + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(r, timeout=30) as f:
            return json.loads(f.read())

    def reset(self, record=False):
        self._req("POST", "/reset" + ("?record=1" if record else ""))

    def stats(self):
        return self._req("GET", "/stats")

    def recorded(self):
        return self._req("GET", "/recorded")

    def cpu_s(self):
        with open(f"/proc/{self.p.pid}/stat") as st:
            f = st.read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.p.kill()
        self.p.wait()


def measured(cmd, env=None, stdout=None, stderr=None):
    """Spawns cmd, reaps it with wait4: (exit code, wall s, user+sys s, peak RSS MiB)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=stdout or subprocess.DEVNULL, stderr=stderr or subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def summary_of(path):
    lines = [l for l in Path(path).read_text().splitlines() if l.strip().startswith("{")]
    return json.loads(lines[-1])


def check_summary(s, rows, calls, label):
    """Every row scored with status ok and the expected judge calls made, per the CLI's summary."""
    j = s.get("judge") or {}
    if (s.get("samples"), s.get("ok"), j.get("judge_calls"), j.get("cache_hits", 0)) != (rows, rows, calls, 0):
        sys.exit(f"{label}: expected {rows} rows ok and {calls} judge calls, no cache hits; "
                 f"the summary says {json.dumps(s)[:2000]}")


# ---------------------------------------------------------------- main


def build(args):
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    binary = Path(args.referee_bin) if args.referee_bin else target / "release" / "referee"
    if args.build == "always" or (args.build == "auto" and not args.referee_bin and not binary.exists()):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "referee-cli"], cwd=ROOT, check=True)
    if not binary.exists():
        sys.exit(f"no referee binary at {binary} (build it, or pass --referee-bin)")
    return binary


def git_rev(binary):
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"


def med(xs):
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--workloads", default="A,B")
    ap.add_argument("--concurrency", type=int, default=1024, help="the endpoint's max_concurrency and the anchor's semaphore")
    ap.add_argument("--per-call", type=int, default=1, help="workload B's rubric per_call (default 1: 4 calls per sample)")
    ap.add_argument("--referee-bin")
    ap.add_argument("--build", choices=["auto", "always", "never"], default="auto")
    ap.add_argument("--no-anchor", action="store_true")
    ap.add_argument("--json", help="also write the JSON result here")
    args = ap.parse_args()
    binary = build(args)
    py = None if args.no_anchor else ensure_venv()
    DATA.mkdir(parents=True, exist_ok=True)
    mock = Mock(args.delay)
    sides = ([] if args.no_anchor else ["anchor"]) + ["referee default", "referee in_flight=1024"]
    results = {}
    plan = {}
    try:
        for w in args.workloads.split(","):
            rows, calls_per, _ = WORKLOADS[w]
            calls = rows * (calls_per if w == "A" else -(-len(RUBRIC) // args.per_call))
            data = DATA / f"workload_{w}.jsonl"
            with open(data, "w", encoding="utf-8") as f:
                for r in gen_rows(rows, w.lower(), SEED + ord(w)):
                    f.write(json.dumps(r) + "\n")
            spec = DATA / f"workload_{w}.yaml"
            spec.write_text(spec_text(w, mock.info["base_url"], args.concurrency, args.per_call))
            # The checking run: every row ok, the expected calls, and the bodies for the anchor.
            out, err = DATA / f"workload_{w}.out.jsonl", DATA / f"workload_{w}.err"
            mock.reset(record=True)
            with open(err, "w") as e:
                rc, *_ = measured([str(binary), "score", str(spec), str(data), "-o", str(out), "--summary-json"],
                                  env=dict(os.environ, REFEREE_IN_FLIGHT="1024"), stderr=e)
            if rc != 0:
                sys.exit(f"workload {w}: referee exited {rc}:\n{err.read_text()[-3000:]}")
            res = [json.loads(l) for l in out.read_text().splitlines()]
            bad = [r for r in res if r.get("status") != "ok" or r.get("reward") is None]
            if len(res) != rows or bad:
                sys.exit(f"workload {w}: {len(res)} results, {len(bad)} not ok, e.g. {bad[:2]}")
            st = mock.stats()
            if st["requests"] != calls:
                sys.exit(f"workload {w}: the server answered {st['requests']} calls, expected {calls}")
            check_summary(summary_of(err), rows, calls, f"workload {w} (checking run)")
            bodies = DATA / f"workload_{w}.bodies.json"
            bodies.write_text(json.dumps(mock.recorded()))
            mock.reset()
            plan[w] = {"rows": rows, "calls": calls, "data": data, "spec": spec, "bodies": bodies}
            results[w] = {s: [] for s in sides}
        for run in range(args.runs):
            for w, pl in plan.items():
                for side in sides:
                    mock.reset()
                    c0 = mock.cpu_s()
                    with tempfile.NamedTemporaryFile("w+", dir=DATA, suffix=".log") as log:
                        if side == "anchor":
                            cmd = [str(py), str(HERE / "anchor.py"), "--base-url", mock.info["base_url"],
                                   "--bodies", str(pl["bodies"]), "--concurrency", str(args.concurrency)]
                            rc, wall, cpu, rss = measured(cmd, stdout=log, stderr=log)
                        else:
                            env = dict(os.environ)
                            env.pop("REFEREE_IN_FLIGHT", None)
                            if side.endswith("=1024"):
                                env["REFEREE_IN_FLIGHT"] = "1024"
                            cmd = [str(binary), "score", str(pl["spec"]), str(pl["data"]), "-o", "/dev/null",
                                   "--summary-json"]
                            rc, wall, cpu, rss = measured(cmd, env=env, stderr=log)
                        log.seek(0)
                        text = log.read()
                    if rc != 0:
                        sys.exit(f"{w} {side}: exit {rc}\n{text[-3000:]}")
                    extra = {}
                    if side == "anchor":
                        a = json.loads(text.strip().splitlines()[-1])
                        if a["parsed"] != pl["calls"]:
                            sys.exit(f"{w} anchor: {a['parsed']} of {pl['calls']} verdicts parsed")
                        extra = {"calls_wall_s": a["calls_wall_s"], "calls_cpu_ms_per_call": 1000 * a["calls_cpu_s"] / pl["calls"],
                                 "openai": a["openai"]}
                    else:
                        lines = [l for l in text.splitlines() if l.strip().startswith("{")]
                        sm = json.loads(lines[-1])
                        check_summary(sm, pl["rows"], pl["calls"], f"{w} {side}")
                        extra = {"own_seconds": sm.get("seconds")}
                    st = mock.stats()
                    if st["requests"] != pl["calls"]:
                        sys.exit(f"{w} {side}: the server answered {st['requests']} calls, expected {pl['calls']}")
                    rec = {"wall_s": wall, "cpu_s": cpu, "cpu_ms_per_call": 1000 * cpu / pl["calls"],
                           "peak_rss_mib": rss, "server_peak_in_flight": st["peak_in_flight"],
                           "server_peak_connections": st["peak_connections"],
                           "server_connections_opened": st["connections_opened"],
                           "server_cpu_s": mock.cpu_s() - c0, "loadavg_after": os.getloadavg()[0], **extra}
                    results[w][side].append(rec)
                    print(f"run {run + 1}/{args.runs} {w} {side:24s} wall {wall:7.2f} s  cpu {rec['cpu_ms_per_call']:.3f} ms/call"
                          f"  rss {rss:6.1f} MiB  server peak in flight {st['peak_in_flight']}", file=sys.stderr)
    finally:
        mock.stop()
    report(args, binary, plan, results, sides)


def report(args, binary, plan, results, sides):
    out = {"machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
           "bench_commit": git_rev(binary), "referee_bin": str(binary), "delay_s": args.delay, "runs": args.runs,
           "max_concurrency": args.concurrency, "workloads": {}}
    for w, pl in plan.items():
        floor = args.delay * 1  # one call per sample chain: a rubric's calls run concurrently
        wo = {"rows": pl["rows"], "calls": pl["calls"], "floor_s": floor, "desc": WORKLOADS[w][2], "sides": {}}
        for side in sides:
            rs = results[w][side]
            m = {k: med([r[k] for r in rs]) for k in rs[0] if isinstance(rs[0][k], (int, float))}
            m["wall_over_floor"] = m["wall_s"] / floor
            if "anchor" in results[w] and side != "anchor":
                m["wall_vs_anchor"] = med([r["wall_s"] / a["wall_s"] for r, a in zip(rs, results[w]["anchor"])])
                m["cpu_vs_anchor"] = med([r["cpu_s"] / a["cpu_s"] for r, a in zip(rs, results[w]["anchor"])])
                m["rss_vs_anchor"] = med([r["peak_rss_mib"] / a["peak_rss_mib"] for r, a in zip(rs, results[w]["anchor"])])
            if side != "anchor":
                m["targets"] = {"wall_within_25pct_of_floor": m["wall_s"] <= TARGET_WALL * floor,
                                "cpu_le_0.3ms_per_call": m["cpu_ms_per_call"] <= TARGET_CPU_MS,
                                "peak_rss_lt_200mib": m["peak_rss_mib"] < TARGET_RSS_MIB}
            wo["sides"][side] = {"median": m, "runs": rs}
        out["workloads"][w] = wo
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nMedians of {args.runs} interleaved runs; delay {args.delay} s; max_concurrency {args.concurrency}; "
          f"benches at {out['bench_commit']}, binary {binary}.\n")
    print("| workload | side | wall s | wall ÷ floor | wall ÷ anchor | CPU ms/call | CPU ÷ anchor | peak RSS MiB | server peak in flight |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for w, wo in out["workloads"].items():
        for side, s in wo["sides"].items():
            m = s["median"]
            va = f"{m['wall_vs_anchor']:.2f}" if "wall_vs_anchor" in m else ("1" if side == "anchor" else "-")
            ca = f"{m['cpu_vs_anchor']:.3f}" if "cpu_vs_anchor" in m else ("1" if side == "anchor" else "-")
            print(f"| {w}: {wo['desc']} | {side} | {m['wall_s']:.2f} | {m['wall_over_floor']:.2f} | {va} | "
                  f"{m['cpu_ms_per_call']:.3f} | {ca} | {m['peak_rss_mib']:.1f} | {m['server_peak_in_flight']:.0f} |")
    if "anchor" in sides:
        print("\nAnchor, the calls alone (after `import openai` and the client's creation): "
              + "; ".join(f"{w}: {wo['sides']['anchor']['median']['calls_wall_s']:.2f} s, "
                          f"{wo['sides']['anchor']['median']['calls_cpu_ms_per_call']:.3f} ms CPU/call"
                          for w, wo in out["workloads"].items()))
    print(f"\nTargets of the async core (wall ≤ {TARGET_WALL} × floor, ≤ {TARGET_CPU_MS} ms CPU/call, "
          f"peak RSS < {TARGET_RSS_MIB} MiB):\n")
    print("| workload | side | wall | CPU | RSS |\n|---|---|---|---|---|")
    for w, wo in out["workloads"].items():
        for side, s in wo["sides"].items():
            t = s["median"].get("targets")
            if t:
                pf = ["pass" if v else "FAIL" for v in t.values()]
                print(f"| {w} | {side} | {pf[0]} | {pf[1]} | {pf[2]} |")


if __name__ == "__main__":
    main()
