"""A sweep's results as a plain-text table: mean +- standard deviation over seeds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .sweep import load_sweep, summary_cells


def format_table(result: dict[str, Any] | str | Path) -> str:
    """One block per (setting, task); a row per (scheme, size), a column per length.

    Each cell is ``mean +- std`` of the accuracy over the seeds, in percent; the
    ``lr`` column is the learning rate the scheme trained at (chosen by tuning
    when the sweep had several). ``result`` is read by ``load_sweep`` (a path
    too; schema 1 is upgraded).
    """
    result = load_sweep(result)
    grid, config = result["grid"], result["config"]
    rows = result["summary"]
    lengths = sorted({r["length"] for r in rows})
    cells = summary_cells(rows)
    rate = {  # schema 3 tunes every training size; schema 2 one rate for all sizes
        (c["setting"], c["task"], c["scheme"], c.get("train_size")): c["learning_rate"]
        for c in result["tuning"]["chosen"]
    }
    lines = [
        f"accuracy in % (mean +- std over seeds {grid['seed']}), trained at length "
        f"{config['train_length']}, {config['steps']} steps"
    ]
    width = max(len(s) for s in grid["scheme"]) + 2
    for setting in grid["setting"]:
        for task in grid["task"]:
            about = result["tasks"][task]
            lines.append("")
            lines.append(
                f"{setting}, {task}: {about['description']} "
                f"(chance {100 * about['chance']:.0f}%)"
            )
            lines.append(
                f"{'scheme':<{width}}{'lr':>8}{'size':>6}"
                + "".join(f"{'n=' + str(n):>14}" for n in lengths)
            )
            for scheme in grid["scheme"]:
                for size in grid["train_size"]:
                    lr = rate.get((setting, task, scheme, size))
                    lr = rate.get((setting, task, scheme, None)) if lr is None else lr
                    text = f"{scheme:<{width}}{'-' if lr is None else f'{lr:g}':>8}"
                    text += f"{size:>6}"
                    for n in lengths:
                        cell = cells.get((setting, task, scheme, size, n))
                        text += (
                            f"{100 * cell['mean']:>8.1f} +-{100 * cell['std']:>4.1f}"
                            if cell
                            else f"{'-':>14}"
                        )
                    lines.append(text)
    return "\n".join(lines)


__all__ = ["format_table"]
