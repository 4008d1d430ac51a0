"""verl custom reward function that scores through a running `referee serve`.

verl ≥ 0.9 config (the old top-level `custom_reward_function.*` keys are ignored since 0.9.0):
    reward:
      custom_reward_function:
        path: examples/serve/verl_reward.py
        name: compute_score

Environment: REFEREE_URL (default http://127.0.0.1:8000), REFEREE_PROGRAM (default "default"),
REFEREE_TIMEOUT_S (default 600). Stdlib only.

Every row returns the same keys, all numbers except `status`/`reason` (verl stacks them into
`reward_extra_info`, and skips text in its metrics): `score`, `referee_ok`, `referee_error`,
`referee_not_applicable`, and per named component of the served spec `<name>` and
`<name>/valid`. A sample Referee could not score has `score` = the spec's `on_error` (0.0 without
one) and `referee_error` 1.0; a component without a value is 0.0 with `<name>/valid` 0.0 (never
None or NaN: verl cannot stack None, and GDPO would spread a NaN into every advantage). Values JSON cannot carry (numpy scalars and arrays in `extra_info`) are converted.
`compute_score_batch` is the plural form (verl < 0.9's `batch` manager).
"""
import json
import math
import os
import threading
import urllib.request

URL = os.environ.get("REFEREE_URL", "http://127.0.0.1:8000").rstrip("/")
PROGRAM = os.environ.get("REFEREE_PROGRAM", "default")
TIMEOUT = float(os.environ.get("REFEREE_TIMEOUT_S", "600"))

# The served spec's component names, learned from the first result that has them: a row that
# never became a sample comes back without components, and its keys must still match.
_names = None
_lock = threading.Lock()


def _plain(v):
    """A JSON value for anything verl puts in a row (numpy values have tolist())."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_plain(x) for x in v]
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if v is None or isinstance(v, (str, int, bool)):
        return v
    if hasattr(v, "tolist"):
        return _plain(v.tolist())
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def _row(data_source, solution_str, ground_truth, extra_info):
    # verl's own row shape: Referee reads `reward_model.ground_truth` and the response.
    return {"data_source": data_source, "response": solution_str,
            "reward_model": {"style": "rule", "ground_truth": ground_truth},
            "extra_info": extra_info or {}}


def _post(samples):
    body = json.dumps({"program": PROGRAM, "samples": _plain(samples)}).encode()
    req = urllib.request.Request(URL + "/v1/score", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
        return json.loads(r.read())["results"]


def _component_names(results):
    global _names
    with _lock:
        if _names is None:
            for res in results:
                if res.get("components"):
                    _names = list(res["components"])
                    break
        if _names is None:
            # Only rows that never became samples so far: one probe row that always maps.
            (probe,) = _post([{"item": {}, "sample": {"output_text": ""}}])
            _names = list(probe.get("components") or {})
        return _names


def _score(rows):
    results = _post(rows)
    names = _component_names(results)
    out = []
    for res in results:
        status = res.get("status", "error")
        reward = res.get("reward")
        d = {"score": 0.0 if reward is None else float(reward),
             "referee_ok": float(status == "ok"),
             "referee_error": float(status == "error"),
             "referee_not_applicable": float(status == "not_applicable"),
             "status": status, "reason": res.get("reason") or ""}
        comps = res.get("components") or {}
        for k in names:
            v = comps.get(k)
            d[k] = 0.0 if v is None else float(v)
            d[k + "/valid"] = 0.0 if v is None else 1.0
        out.append(d)
    return out


def compute_score(data_source=None, solution_str=None, ground_truth=None, extra_info=None, **kwargs):
    return _score([_row(data_source, solution_str, ground_truth, extra_info)])[0]


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs):
    extra_infos = extra_infos or [None] * len(solution_strs)
    return _score([_row(d, s, g, e) for d, s, g, e in zip(data_sources, solution_strs, ground_truths, extra_infos)])
