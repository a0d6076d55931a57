"""Gradient flow, measured: where a position objective and a content objective meet.

Chapter 1 quotes the claim that "because positional and content signals never
add together into a single vector, gradients from positional tasks cannot
interfere with learning in the content stream". Its first half is a fact of
DeBERTa's forward pass (no position vector is ever added to a hidden state);
its second half is about parameters, and is measured here on the corpus.

Two objectives on the same causal byte model (the experiments' ``TinyModel``
and a second linear head, :class:`TwoHeads`):

- ``content``: next-byte language modelling (the LM head), the objective the
  content stream exists for;
- ``position``: recall the byte ``offset`` back (``x[t - offset]`` at every
  position ``t >= offset``, the second head), a rule that only positions can
  solve (chapter 9's "the token 3 back" on real text).

Where the two send gradient to the same parameters (:data:`SHARED`: the query
and key projections, which DeBERTa's c2p and p2c reuse with the relative
table, and the token embedding, which BERT's absolute positions are summed
into), :func:`gradient_cosines` measures the cosine between the two gradients
on one batch: 0 is no interference, below 0 conflict, above 0 help.
:func:`train_objectives` trains on ``content``, ``position`` or both and
records the cosines over training and both objectives' validation losses at
the end, so :func:`interference_study` can say what adding one objective costs
the other (the loss with both minus the loss with one alone).

Shapes:
    stream: ``(bytes,)`` uint8; inputs, targets: ``(b, n)``
"""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from relpos.checks import check_int

from .. import _cli
from .._cli import OneLineParser
from ..experiments.config import derive_seed
from ..experiments.model import TinyModel
from ..experiments.train import deterministic, optimise
from .config import TextConfig, data_seed, model_seed
from .corpus import VOCAB_BYTES
from .lm import causal_windows, language_model, windows_at
from .train import corpus_of

#: The two objectives.
OBJECTIVES = ("content", "position")
#: The objectives a run trains on.
MIXES = (("content",), ("position",), ("content", "position"))
#: Groups of parameters both objectives reach, by the ends of their names.
SHARED = {
    "projections": ("query_proj.weight", "key_proj.weight"),
    "embedding": ("token_embedding.weight",),
}


class TwoHeads(nn.Module):
    """A language model with a second head that recalls the byte ``offset`` back.

    Shapes:
        forward: inputs ``(b, n)`` -> content logits ``(b, n, 256)``,
            position logits ``(b, n, 256)``
    """

    def __init__(self, model: TinyModel, offset: int) -> None:
        super().__init__()
        self.offset = check_int("offset", offset, minimum=1)
        self.model = model
        self.recall = nn.Linear(model.config.hidden_size, VOCAB_BYTES)

    def forward(self, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.model.encoder(self.model.embed(inputs), None)  # (b, n, hidden)
        return self.model.classifier(hidden), self.recall(hidden)


def objective_losses(
    heads: TwoHeads, inputs: torch.Tensor, targets: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The mean loss (nats) of each objective on one batch.

    ``content``: next byte at every position; ``position``: the input byte
    ``offset`` back, at every position ``t >= offset``.

    Shapes:
        inputs, targets: ``(b, n)`` (targets: the next bytes), ``n > offset``
    """
    if inputs.shape[1] <= heads.offset:
        raise ValueError(
            f"inputs must be longer than offset={heads.offset}, got {inputs.shape[1]}"
        )
    content, position = heads(inputs)  # (b, n, 256) each
    recalled = position[:, heads.offset :]  # (b, n - offset, 256)
    return {
        "content": F.cross_entropy(content.flatten(0, 1), targets.flatten()),
        "position": F.cross_entropy(
            recalled.flatten(0, 1), inputs[:, : -heads.offset].flatten()
        ),
    }


def shared_parameters(model: nn.Module, group: str) -> list[nn.Parameter]:
    """The parameters of one group of :data:`SHARED` (the model must have some).

    Shapes:
        (no tensors)
    """
    if group not in SHARED:
        raise ValueError(f"group must be one of {tuple(SHARED)}, got {group!r}")
    found = [p for n, p in model.named_parameters() if n.endswith(SHARED[group])]
    if not found:
        raise ValueError(f"model has no parameter of group {group!r}")
    return found


def gradient_cosines(
    heads: TwoHeads, losses: dict[str, torch.Tensor]
) -> dict[str, float]:
    """The cosine of the two objectives' gradients on every group of :data:`SHARED`.

    The graph of ``losses`` is kept (the caller may still backpropagate).

    Shapes:
        losses: two scalars, ``content`` and ``position``
    """
    result = {}
    for group in SHARED:
        params = shared_parameters(heads, group)
        flat = []
        for name in OBJECTIVES:
            grads = torch.autograd.grad(losses[name], params, retain_graph=True)
            flat.append(torch.cat([g.flatten() for g in grads]).double())
        norms = flat[0].norm() * flat[1].norm()
        result[group] = float(flat[0] @ flat[1] / norms) if norms > 0 else 0.0
    return result


def initial_heads(config: TextConfig, offset: int) -> TwoHeads:
    """The two-headed model of ``config`` before training, under its model seed."""
    if not config.causal:
        raise ValueError(f"config.setting must be 'causal', got {config.setting!r}")
    with deterministic(model_seed(config)):
        return TwoHeads(language_model(config), offset)


def train_objectives(
    config: TextConfig,
    objectives: tuple[str, ...],
    *,
    offset: int = 3,
    measure_every: int = 25,
    valid_windows: int = 64,
    split: str = "valid",
) -> dict[str, Any]:
    """Train on ``objectives`` (summed), measuring the gradient cosines as it goes.

    Every run of one (scheme, seed) starts from the same weights and reads the
    same batches, whatever it trains on. Returns ``objectives``, ``steps`` (the
    steps measured), ``cosines`` (``{group: [cosine per measured step]}``),
    ``valid`` (each objective's loss on ``valid_windows`` windows of ``L`` of
    the validation split at the end; the untrained one is still measured;
    with ``split="test"`` the key is ``test`` and the windows the test split's)
    and ``seconds``.

    Shapes:
        (no tensors)
    """
    if not objectives or any(o not in OBJECTIVES for o in objectives):
        raise ValueError(
            f"objectives must be a non-empty tuple from {OBJECTIVES}, "
            f"got {objectives!r}"
        )
    check_int("measure_every", measure_every, minimum=1)
    check_int("valid_windows", valid_windows, minimum=1)
    if split not in ("valid", "test"):
        raise ValueError(f"split must be 'valid' or 'test', got {split!r}")
    start = time.perf_counter()
    corpus = corpus_of(config)
    stream, valid = corpus.stream("train"), corpus.stream(split)
    heads = initial_heads(config, offset)
    data = torch.Generator().manual_seed(data_seed(config))
    width = config.train_length + 1
    measured: list[int] = []
    cosines: dict[str, list[float]] = {group: [] for group in SHARED}

    def batch_loss(step: int) -> torch.Tensor:
        starts = torch.randint(
            stream.numel() - width + 1, (config.batch_size,), generator=data
        )
        inputs, targets = causal_windows(windows_at(stream, starts, width))
        losses = objective_losses(heads, inputs, targets)
        if step % measure_every == 0 or step == config.steps - 1:
            measured.append(step)
            for group, value in gradient_cosines(heads, losses).items():
                cosines[group].append(value)
        return sum(losses[name] for name in objectives)

    with deterministic(model_seed(config)):
        optimise(heads, config, batch_loss)
    heads.eval()
    seed = derive_seed("text-gradients-valid", config.train_length)
    picks = torch.Generator().manual_seed(seed)
    starts = torch.randint(valid.numel() - width + 1, (valid_windows,), generator=picks)
    with torch.no_grad():
        inputs, targets = causal_windows(windows_at(valid, starts, width))
        final = objective_losses(heads, inputs, targets)
    return {
        "scheme": config.scheme,
        "seed": config.seed,
        "objectives": list(objectives),
        "steps": measured,
        "cosines": cosines,
        split: {name: float(loss) for name, loss in final.items()},
        "seconds": time.perf_counter() - start,
    }


def summarize_interference(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per scheme: the mean cosine over training (both objectives) and the costs.

    ``cost_to_content``: the content loss trained on both minus trained on
    content alone (nats; > 0: the position objective hurts the LM);
    ``cost_to_position`` likewise. Each a list over the seeds, and its mean.
    ``cosine``: ``{group: [mean cosine over the measured steps, per seed]}``.
    """
    rows = []
    for scheme in dict.fromkeys(r["scheme"] for r in runs):
        mine = [r for r in runs if r["scheme"] == scheme]
        by = {(tuple(r["objectives"]), r["seed"]): r for r in mine}
        seeds = sorted({r["seed"] for r in mine})
        both = ("content", "position")
        row: dict[str, Any] = {"scheme": scheme, "seeds": seeds, "cosine": {}}
        for group in SHARED:
            row["cosine"][group] = [
                statistics.fmean(by[(both, s)]["cosines"][group]) for s in seeds
            ]
        for name in OBJECTIVES:
            costs = [
                by[(both, s)]["valid"][name] - by[((name,), s)]["valid"][name]
                for s in seeds
            ]
            row[f"cost_to_{name}"] = costs
            row[f"mean_cost_to_{name}"] = statistics.fmean(costs)
        rows.append(row)
    return rows


def interference_study(
    base: TextConfig,
    schemes: list[str],
    seeds: list[int],
    *,
    offset: int = 3,
    measure_every: int = 25,
) -> dict[str, Any]:
    """Every (scheme, seed) trained on each of :data:`MIXES`: the JSON dict.

    Keys: ``config`` (the base, as a dict), ``offset``, ``measure_every``,
    ``corpus`` (``Corpus.about``), ``runs`` and ``summary``
    (:func:`summarize_interference`).
    """
    corpus = corpus_of(base)
    base = base.replace(corpus_sha256=corpus.sha256)
    runs = []
    for scheme in schemes:
        for seed in seeds:
            config = base.replace(scheme=scheme, seed=seed)
            for mix in MIXES:
                runs.append(
                    train_objectives(
                        config, mix, offset=offset, measure_every=measure_every
                    )
                )
    return {
        "config": base.to_dict(),
        "offset": offset,
        "measure_every": measure_every,
        "corpus": corpus.about(),
        "runs": runs,
        "summary": summarize_interference(runs),
    }


#: The study behind ``results/text_gradients.json`` (one layer, width 32).
STUDY = dict(
    steps=300, batch_size=16, num_layers=1, hidden_size=32, learning_rate=3e-3
)


def build_parser() -> OneLineParser:
    """``python -m relpos.book.text.gradients``'s flags (one-line errors)."""
    from ..experiments.schemes import SCHEMES

    parser = OneLineParser(
        prog="python -m relpos.book.text.gradients",
        description="Where a position objective and a content objective meet: "
        "the gradients of each on the shared weights, per scheme and seed.",
    )
    add = parser.add_argument
    add("--output", required=True, help="the JSON to write")
    add("--schemes", type=_cli.names("schemes", lambda: SCHEMES),
        default=["absolute", "alibi", "deberta"], metavar="NAMES",
        help="comma-separated position schemes")
    add("--seeds", type=_cli.integers(0), default=[0, 1, 2], metavar="S,S,...",
        help="comma-separated seeds")
    add("--steps", type=_cli.integer(1), default=STUDY["steps"],
        help="training steps of each run")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """``python -m relpos.book.text.gradients --output PATH [--schemes a,b]``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    base = _cli.config_or_exit(
        parser,
        lambda: TextConfig(setting="causal", **{**STUDY, "steps": args.steps}),
        {"steps": "--steps"},
    )
    _cli.output_flag(parser, "--output", args.output, make_parents=True)
    torch.set_num_threads(1)
    result = interference_study(base, args.schemes, args.seeds)
    finite = all(math.isfinite(v) for r in result["runs"] for v in r["valid"].values())
    if not finite:
        raise SystemExit("a run diverged: its validation loss is not finite")
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()


__all__ = [
    "MIXES",
    "build_parser",
    "OBJECTIVES",
    "SHARED",
    "STUDY",
    "TwoHeads",
    "gradient_cosines",
    "initial_heads",
    "interference_study",
    "main",
    "objective_losses",
    "shared_parameters",
    "summarize_interference",
    "train_objectives",
]
