"""Relative positions at work: tiny models trained on synthetic tasks, one per scheme.

A reader can hold the whole experiment in their head:

- ``tasks``: random token sequences with one label per position (``relative``:
  the token 3 back; ``absolute``: the position mod 4; ``far``: the token 12 back),
  and tasks whose distance grows with the length (``copy``, ``reverse``,
  ``mqar``, ``addition``; their layouts in ``layouts``, what a scheme provably
  cannot do on them in ``bounds``).
- ``schemes``: the registry of position schemes (``none``, ``absolute``,
  ``sinusoidal``, ``deberta``, ``deberta-buckets``); ``register_scheme`` adds one.
- ``model``: token embedding -> the scheme's positions -> encoder -> classifier.
- ``config``: the one ``Config`` dataclass of a run, and its derived seeds.
- ``train``: the training loop, on one screen.
- ``measure``: accuracy (and exact match) per length, the learned table's bands,
  the c2p/p2c pattern.
- ``randomised``: randomised positions (Ruoss et al. 2023), for any scheme that
  takes positions (``Config.random_positions``, the ``-randomised`` schemes).
- ``sweep``: every (setting, task, scheme, training-set size, seed) into one JSON
  (``load_sweep`` reads it back, the one reader of its schemas);
  ``engine`` hands the runs to local processes or a Dask cluster, ``store``
  keeps every finished run (a stopped sweep resumes), ``tuning`` chooses each
  scheme's learning rate on validation sequences at the training length.
- ``cli``: ``python -m relpos.book.experiments``; its flags are ``Config``'s fields
  and its checks ``Config``'s (``--help`` lists every flag and default).

In a notebook, one model per scheme, a second or two each on one CPU core
(``torch.set_num_threads(1)`` is faster for models this small)::

    from relpos.book.experiments import Config, compare
    live = Config(task="relative", steps=150, train_size=256, test_lengths=(32, 128))
    runs = compare(live, ["absolute", "deberta"])   # {scheme: run record}
    runs["deberta"]["accuracy"]                     # {"32": 1.0, "128": 1.0}

The committed sweep is one command (its defaults); see ``cli``.

Shape legend:
    tokens, labels: ``(b, n)``; logits: ``(b, n, classes)``
"""

from .config import Config, data_seed, derive_seed, model_seed
from .measure import (
    accuracy,
    attention_at_distance,
    attention_peaks,
    band_profile,
    by_distance,
    evaluate,
    evaluation_set,
    exact_match,
    mean_scores,
    relative_table,
    table_similarity,
    unseen_margin,
)
from .model import TinyModel, count_parameters
from .report import format_table
from .schemes import (
    SCHEMES,
    AttentionEncoder,
    ContentSelfAttention,
    LearnedPositions,
    SinusoidalPositions,
    attention_encoder,
    build_scheme,
    register_scheme,
)
from .engine import ENGINES, execute, open_engine, run_job
from .store import RunStore, run_key
from .sweep import (
    SCHEMA,
    check_tune_seeds,
    compare,
    load_sweep,
    machine_info,
    numbers_only,
    run_one,
    run_sweep,
    summarize,
    summary_cells,
)
from .tuning import tune_cells, tune_one, validation_loss, validation_set
from .tasks import NO_TOKEN, TASKS, VOCAB_SIZE, Task, get_task
from .train import Trained, deterministic, initial_model, train, training_set
from .randomised import draw_positions
from .coverage import (
    READERS,
    Coverage,
    Entries,
    KindCoverage,
    coverage,
    coverage_table,
    gradient_rows,
    register_reader,
)
from .equivariance import (
    Bound,
    causal_mean_spread,
    expected_max_share,
    expected_max_shares,
    loss_optimal_accuracy,
    no_token_preferred,
    permutation_bound,
    permutation_gap,
    reversal_bound,
    reversal_gap,
)
from .shared_entries import entry_functions, shared_distances, shared_entry_bound

__all__ = [
    "unseen_margin",
    "attention_at_distance",
    "AttentionEncoder",
    "Config",
    "ContentSelfAttention",
    "ENGINES",
    "LearnedPositions",
    "NO_TOKEN",
    "RunStore",
    "SCHEMA",
    "SCHEMES",
    "SinusoidalPositions",
    "TASKS",
    "Task",
    "TinyModel",
    "Trained",
    "VOCAB_SIZE",
    "accuracy",
    "attention_encoder",
    "attention_peaks",
    "band_profile",
    "build_scheme",
    "by_distance",
    "check_tune_seeds",
    "tune_cells",
    "validation_loss",
    "compare",
    "count_parameters",
    "data_seed",
    "derive_seed",
    "deterministic",
    "evaluate",
    "evaluation_set",
    "exact_match",
    "draw_positions",
    "training_set",
    "execute",
    "format_table",
    "get_task",
    "initial_model",
    "load_sweep",
    "machine_info",
    "mean_scores",
    "model_seed",
    "numbers_only",
    "open_engine",
    "register_scheme",
    "relative_table",
    "run_job",
    "run_key",
    "run_one",
    "run_sweep",
    "summarize",
    "summary_cells",
    "table_similarity",
    "train",
    "READERS",
    "Coverage",
    "Entries",
    "KindCoverage",
    "coverage",
    "coverage_table",
    "gradient_rows",
    "register_reader",
    "Bound",
    "causal_mean_spread",
    "expected_max_share",
    "expected_max_shares",
    "loss_optimal_accuracy",
    "no_token_preferred",
    "permutation_bound",
    "entry_functions",
    "shared_distances",
    "shared_entry_bound",
    "permutation_gap",
    "reversal_bound",
    "reversal_gap",
    "tune_one",
    "validation_set",
]

# The interventions' schemes (a sinusoid with a learned scale) are schemes like any
# other: registered here so that a sweep and its command line know them.
from .interventions import scaled as _scaled  # noqa: E402,F401
from .interventions import fire_threshold as _fire_threshold  # noqa: E402,F401
