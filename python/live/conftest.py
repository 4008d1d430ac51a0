"""Fixtures shared by the live trainer tests (python/live/<trainer>/): the `referee` CLI that
every adapter is compared with (`cli`, from python/tests/conftest.py, so both suites compare
with the CLI the same way) and `root`. Each trainer's tests run in that trainer's own venv
(scripts/trainer_venv.sh), with the referee wheel installed in it (scripts/test_live.sh)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_spec = importlib.util.spec_from_file_location(
    "_referee_tests_conftest", ROOT / "python" / "tests" / "conftest.py"
)
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)

referee_bin = _shared.referee_bin
cli = _shared.cli


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
