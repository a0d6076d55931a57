"""The tiny experiment settings, the chapters' live settings and the one-thread
fixtures that the scheme tests and the exercise tests share."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import torch

from relpos.book.experiments import Config, compare

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


#: Chapters 9 and 10 train these live; a test that trains one is marked TRAINS.
LIVE = Config(task="relative", steps=200, train_size=256, test_lengths=(32, 128))
FEW_STEPS = 20
TRAINS = pytest.mark.slow  # a compare(...) run of the chapter's settings, seconds each


def run_of(config: Config, scheme: str) -> dict[str, Any]:
    """The run record of one scheme trained with ``config``."""
    return compare(config, [scheme])[scheme]


@pytest.fixture(scope="module", autouse=True)
def one_thread_per_module() -> Iterator[None]:
    """One torch thread for a whole module, its module-scoped trained runs included."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
