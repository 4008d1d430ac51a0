"""The anchor: a reward server written the way OpenRLHF's examples write them (FastAPI + uvicorn,
Python scoring in the request handler). GSM8K strict: the answer after `#### ` must equal the label.

    uvicorn fastapi_app:app --host 127.0.0.1 --port PORT --workers N --log-level warning
"""
import re

from fastapi import FastAPI, Request

app = FastAPI()
ANSWER = re.compile(r"#### (-?[0-9][0-9,]*(?:\.[0-9]+)?)")


def score(response: str, label: str) -> float:
    m = ANSWER.findall(response)
    if len(m) != 1:
        return 0.0
    try:
        return 1.0 if float(m[0].replace(",", "")) == float(label.replace(",", "")) else 0.0
    except ValueError:
        return 0.0


@app.post("/get_reward")
async def get_reward(request: Request):
    data = await request.json()
    queries, prompts, labels = data["query"], data.get("prompts") or [], data.get("labels") or []
    rewards = []
    for i, q in enumerate(queries):
        p = prompts[i] if i < len(prompts) else ""
        response = q[len(p):] if q.startswith(p) else q
        rewards.append(score(response, str(labels[i])))
    return {"rewards": rewards, "scores": rewards, "extra_logs": {}}
