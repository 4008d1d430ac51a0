"""Fixtures shared by the live trainer tests (python/live/<trainer>/): the `referee` CLI that
every adapter is compared with. Each trainer's tests run in that trainer's own venv
(scripts/trainer_venv.sh), with the referee wheel installed in it (scripts/test_live.sh)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def referee_bin() -> Path:
    p = Path(os.environ.get("REFEREE_BIN", ROOT / "target" / "debug" / "referee"))
    if not p.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "referee-cli"], cwd=ROOT, check=True)
    return p


@pytest.fixture(scope="session")
def cli():
    """``cli(spec, rows, *args) -> list[dict]``: ``referee score -q`` on the rows as JSONL, one
    result dict per row, in order."""
    exe = referee_bin()

    def run(spec, rows, *args):
        data = "".join(json.dumps(r) + "\n" for r in rows)
        out = subprocess.run(
            [str(exe), "score", str(spec), "-q", *args],
            input=data.encode(), capture_output=True, check=True, cwd=ROOT,
        )
        return [json.loads(line) for line in out.stdout.decode().splitlines()]

    return run


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
