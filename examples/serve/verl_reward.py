"""verl custom reward function that scores through a running `referee serve`.

verl config:
    custom_reward_function:
      path: examples/serve/verl_reward.py
      name: compute_score            # or compute_score_batch with the batched reward manager

Environment: REFEREE_URL (default http://127.0.0.1:8000), REFEREE_PROGRAM (default "default"),
REFEREE_TIMEOUT_S (default 600). Stdlib only. A sample Referee could not score comes back with
"score": None and its status and reason: it is never turned into a 0 here; decide in the spec
(`on_error:`) what a failure is worth.
"""
import json
import os
import urllib.request

URL = os.environ.get("REFEREE_URL", "http://127.0.0.1:8000").rstrip("/")
PROGRAM = os.environ.get("REFEREE_PROGRAM", "default")
TIMEOUT = float(os.environ.get("REFEREE_TIMEOUT_S", "600"))


def _row(data_source, solution_str, ground_truth, extra_info):
    # verl's own row shape: Referee reads `reward_model.ground_truth` and the response.
    return {"data_source": data_source, "response": solution_str,
            "reward_model": {"style": "rule", "ground_truth": ground_truth},
            "extra_info": extra_info or {}}


def _score(rows):
    body = json.dumps({"program": PROGRAM, "samples": rows}).encode()
    req = urllib.request.Request(URL + "/v1/score", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
        results = json.loads(r.read())["results"]
    out = []
    for res in results:
        d = {"score": res.get("reward"), "status": res["status"], "reason": res.get("reason", "")}
        for k, v in (res.get("components") or {}).items():
            d[k] = v
        out.append(d)
    return out


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return _score([_row(data_source, solution_str, ground_truth, extra_info)])[0]


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs):
    extra_infos = extra_infos or [None] * len(solution_strs)
    return _score([_row(d, s, g, e) for d, s, g, e in zip(data_sources, solution_strs, ground_truths, extra_infos)])
