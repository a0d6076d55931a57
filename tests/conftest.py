"""Shared pytest configuration for the relpos unit tests.

- Every test starts from the same torch seed, so a failure reproduces.
- Hypothesis runs without a deadline (the first call into torch, or a first
  compile, can take far longer than the default 200 ms) and with a number of
  examples sized to keep the whole suite within a few minutes on 2 CPU cores.
- ``@pytest.mark.slow`` marks a test that takes more than a few seconds (a
  training run, a compile, a subprocess). ``make test`` runs every test, slow
  ones included (the Makefile passes no ``-m``); for a quick loop while editing,
  ``python -m pytest tests -m "not slow"`` leaves them out.
"""

from __future__ import annotations

import logging
import os
import sys

import pytest
import torch
from hypothesis import HealthCheck, settings

# The helper module next to this file (tests/_deberta.py) is imported by name.
sys.path.insert(0, os.path.dirname(__file__))

# pytest attaches its log-capture handler to every non-propagating logger, torch's
# structured-trace logger included; torch.compile then builds and logs its whole trace
# at DEBUG level (slower compiles, and thousands of "captured log" lines on a failing
# flex test). Letting that logger propagate keeps pytest's handler off it, and torch
# skips the trace when the logger has no handler of its own.
logging.getLogger("torch.__trace").propagate = True


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "slow: takes more than a few seconds; make test runs it, "
        "-m 'not slow' skips it for a quick loop",
    )
    # Emitted by torch.jit on import of transformers; not about relpos.
    config.addinivalue_line(
        "filterwarnings",
        "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning",
    )
    config.addinivalue_line(
        "markers", "slow: compiles with torch.compile (tens of seconds); -m 'not slow' skips"
    )


settings.register_profile(
    "relpos",
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "relpos-thorough", parent=settings.get_profile("relpos"), max_examples=500
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "relpos"))


@pytest.fixture(autouse=True)
def _seed_and_dtype():
    """Seed torch before each test and check that no test leaks a default dtype."""
    torch.manual_seed(0)
    yield
    dtype = torch.get_default_dtype()
    assert dtype == torch.float32, f"a test changed the default dtype to {dtype}"
