"""Shared test setup. The socket guard lives in pyproject's pytest addopts (loopback only)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

# Nothing in the test suite may reach the Hugging Face Hub or any other remote service.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
