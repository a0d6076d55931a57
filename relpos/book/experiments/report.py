"""A sweep's results as a plain-text table: mean +- standard deviation over seeds."""

from __future__ import annotations

from typing import Any


def format_table(result: dict[str, Any]) -> str:
    """One block per task; a row per (scheme, train size), a column per test length.

    Each cell is ``mean +- std`` of the accuracy over the seeds, in percent.
    """
    rows = result["summary"]
    lengths = sorted({r["length"] for r in rows})
    cells = {(r["task"], r["scheme"], r["train_size"], r["length"]): r for r in rows}
    lines = [
        f"accuracy in % (mean +- std over seeds {result['seeds']}), trained at length "
        f"{result['settings']['train_length']}, {result['settings']['steps']} steps"
    ]
    width = max(len(s) for s in result["schemes"]) + 2
    for task in result["tasks"]:
        lines.append("")
        lines.append(
            f"{task}: {result['tasks'][task]['description']} "
            f"(chance {100 * result['tasks'][task]['chance']:.0f}%)"
        )
        lines.append(
            f"{'scheme':<{width}}{'size':>6}"
            + "".join(f"{'n=' + str(n):>14}" for n in lengths)
        )
        for scheme in result["schemes"]:
            for size in result["train_sizes"]:
                text = f"{scheme:<{width}}{size:>6}"
                for n in lengths:
                    cell = cells.get((task, scheme, size, n))
                    text += (
                        f"{100 * cell['mean']:>8.1f} +-{100 * cell['std']:>4.1f}"
                        if cell
                        else f"{'-':>14}"
                    )
                lines.append(text)
    return "\n".join(lines)


__all__ = ["format_table"]
