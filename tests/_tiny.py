"""The tiny experiment settings and the one-thread fixture the scheme tests share."""

from __future__ import annotations

import pytest
import torch

#: A run small enough to build and train in a fraction of a second.
TINY = dict(
    train_length=8,
    test_lengths=(8, 16),
    test_size=4,
    steps=3,
    batch_size=4,
    hidden_size=8,
    num_heads=2,
    intermediate_size=16,
    train_size=8,
)


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread per test: these models run no faster with more."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
