"""Chapter 1's four claims judged on the text results, by rules written down here.

Each verdict is computed from the committed results (never typed in), so a new
sweep that changes a number can change a verdict. The rules:

- ``length`` (a model trained at ``L`` reads longer inputs): a scheme is flat
  when its bits per byte at the longest window exceed those at ``L`` by at most
  :data:`FLAT_BPB` in every seed (causal: chapter 11's protocol sweep, ten seeds
  to ``8 L``; masked: the first sweep, three seeds to ``16 L``).
- ``generalisation`` (what is learned at one position serves at every other):
  a scheme keeps its advantage over ``none`` beyond ``L`` when its
  per-position loss advantage over ``none`` at positions ``L .. 16 L - 1`` of
  the ``16 L`` windows is at least :data:`KEPT` of its advantage at positions
  ``L/2 .. L - 1`` of the same windows, in every seed (the same text at the
  same positions for every scheme, so the text's difficulty cancels).
- For those two: ``holds`` when every relative scheme passes, ``qualified``
  when DeBERTa (``deberta``) passes and another relative scheme does not,
  ``fails`` when DeBERTa does not.
- ``linguistic`` (closers, ``alignment``): ``holds`` when DeBERTa's loss at
  closers whose opener lies beyond ``L``, read in a ``16 L`` window, is below
  ``none``'s and ``absolute``'s and below its own in an ``L`` window (opener out
  of sight), each as a mean over the seeds; else ``fails``.
- ``gradient`` (``gradients``): ``fails`` when DeBERTa's two gradients on the
  query/key projections have a mean cosine below ``-COSINE`` or above
  ``COSINE`` in every seed, or adding the position objective raises the
  content loss in every seed; ``holds`` otherwise.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from ..results import ledger
from ..stats import bootstrap_interval
from .alignment import summarize_alignment

#: The most bits per byte a flat scheme may gain from ``L`` to ``16 L``.
FLAT_BPB = 0.05
#: The share of its advantage over ``none`` a scheme keeps beyond ``L``.
KEPT = 0.9
#: The cosine beyond which two gradients interfere.
COSINE = 0.05
#: The relative schemes judged (those of a sweep among them): the ledger's.
RELATIVE = ledger.RELATIVE_SCHEMES
#: Why a relative scheme can meet something new beyond ``L``: said of a scheme
#: only when the results show it losing there.
BEYOND_L = {
    "rotary": "rotary meets rotation angles never trained",
    "t5": "T5's last bucket, fit on a few distances below L, is read by every key "
    "beyond it",
    "transformer_xl": "Transformer-XL meets sinusoids of distances never trained",
}
#: The chapter of the text results.
CHAPTER = 11


def _runs(result: dict[str, Any], scheme: str) -> list[dict[str, Any]]:
    return [r for r in result["runs"] if r["scheme"] == scheme]


def length_gains(result: dict[str, Any]) -> dict[str, list[float]]:
    """Per scheme, bits per byte at the longest length minus at ``L``, per seed."""
    short = str(result["config"]["train_length"])
    long = str(max(result["config"]["eval_lengths"]))
    return {
        scheme: [r["eval"][long]["bpb"] - r["eval"][short]["bpb"]
                 for r in _runs(result, scheme)]
        for scheme in result["grid"]["scheme"]
    }


def kept_advantage(result: dict[str, Any]) -> dict[str, list[float]]:
    """Per scheme: its advantage over ``none`` beyond ``L`` over that inside, per seed.

    Seeds are paired by their place in the grid (``none``'s seed ``s`` with the
    scheme's seed ``s``). ``none`` itself is left out.
    """
    short = result["config"]["train_length"]
    long = str(max(result["config"]["eval_lengths"]))

    def parts(run: dict[str, Any]) -> tuple[float, float]:
        curve = run["eval"][long]["per_position"]
        return statistics.fmean(curve[short // 2 : short]), statistics.fmean(
            curve[short:]
        )

    base = {r["seed"]: parts(r) for r in _runs(result, "none")}
    kept = {}
    for scheme in result["grid"]["scheme"]:
        if scheme == "none":
            continue
        values = []
        for run in _runs(result, scheme):
            inside, beyond = parts(run)
            none_inside, none_beyond = base[run["seed"]]
            values.append((none_beyond - beyond) / (none_inside - inside))
        kept[scheme] = values
    return kept


def _names(schemes: list[str]) -> str:
    return ", ".join(schemes) if schemes else "no scheme"


def _why(failed: list[str]) -> str:
    """The known reasons of the schemes in ``failed``, as a parenthesis, or ``""``."""
    reasons = [BEYOND_L[s] for s in failed if s in BEYOND_L]
    return f" ({'; '.join(reasons)})" if reasons else ""


def masked_length_record(masked: dict[str, Any]) -> dict[str, Any]:
    """The length claim in the masked setting (DeBERTa's own objective): a record
    without ``seed_claim`` (the seed claim is judged in the causal setting, the
    setting of the literature), by the same rule."""
    relative = [s for s in RELATIVE if s in masked["grid"]["scheme"]]
    gains = length_gains(masked)
    flat = {s: all(g <= FLAT_BPB for g in gains[s]) for s in relative}
    rising = [s for s in relative if not flat[s]]
    return {
        "id": "text-length-masked",
        "chapter": CHAPTER,
        "claim": "A masked language model trained at L reads texts 16 times longer "
        "with no loss of bits per byte.",
        "verdict": ledger.relative_verdict(flat),
        "mechanism": "Flat: "
        f"{_names([s for s in relative if flat[s]])}; rising: {_names(rising)}. "
        "Only a bias that keeps falling with distance stays flat. The likely cause, "
        "not isolated here: a clipped table or a last bucket gives every far key on "
        "both sides the same position terms, and beyond 4 L a masked byte has "
        "hundreds of such keys.",
        "evidence": {"file": "text_masked.json", "keys": ["runs", "config"]},
        "seeds": len(masked["grid"]["seed"]),
    }


def length_record(protocol: dict[str, Any]) -> dict[str, Any]:
    """The causal length record, on chapter 11's protocol sweep (ten seeds, two
    tuning seeds, the whole test split): flat when every seed's bits per byte at
    the longest window is within ``FLAT_BPB`` of its own at ``L``; the interval is
    DeBERTa's rise over its seeds (a bootstrap)."""
    relative = [s for s in RELATIVE if s in protocol["grid"]["scheme"]]
    gains = length_gains(protocol)
    flat = {s: all(g <= FLAT_BPB for g in gains[s]) for s in relative}
    rising = [s for s in relative if not flat[s]]
    factor = max(protocol["config"]["eval_lengths"]) // protocol["config"][
        "train_length"]
    return {
        "id": "text-length",
        "chapter": CHAPTER,
        "claim": f"A causal model trained at L reads non-overlapping windows up to "
        f"{factor} times longer with no loss of bits per byte (it does not break; "
        "whether it uses the longer context is chapter 14's probe).",
        "verdict": ledger.relative_verdict(flat),
        "mechanism": "Flat: "
        f"{_names([s for s in relative if flat[s]])}; rising: "
        f"{_names(rising)}{_why(rising)}. A bounded or monotone distance term "
        "(clipping, log buckets, a linear penalty) presents nothing new "
        "beyond L.",
        "evidence": {"file": "text_causal_protocol.json",
                     "keys": ["runs", "config", "compared"]},
        "seeds": len(protocol["grid"]["seed"]),
        "interval": bootstrap_interval(gains["deberta"]),
    }


def seed_claim_records(
    causal: dict[str, Any], gradients: dict[str, Any]
) -> list[dict[str, Any]]:
    """Three records of what the first text sweep measures, from the results.

    They judged chapter 1's four claims before the probes were built; each claim
    now rests on its probe (``verdicts.probes``), so these carry no
    ``seed_claim`` and their claims say what they measure: the advantage over
    ``none`` kept beyond L, bracket matching past L, and the cosine study of two
    objectives (the length record is :func:`length_record`'s, on the protocol)."""
    seeds = len(causal["grid"]["seed"])
    relative = [s for s in RELATIVE if s in causal["grid"]["scheme"]]
    gains = length_gains(causal)
    flat = {s: all(g <= FLAT_BPB for g in gains[s]) for s in relative}
    kept = kept_advantage(causal)
    keeps = {s: all(k >= KEPT for k in kept[s]) for s in relative}
    rows = {r["scheme"]: r for r in summarize_alignment(causal)}
    deberta = rows["deberta"]
    closers_hold = (
        deberta["far_long"] < rows["none"]["far_long"]
        and deberta["far_long"] < rows["absolute"]["far_long"]
        and deberta["far_long"] < deberta["far_short"]
    )
    study = {r["scheme"]: r for r in gradients["summary"]}["deberta"]
    cosines = study["cosine"]["projections"]
    interferes = all(abs(c) > COSINE for c in cosines) or all(
        c > 0 for c in study["cost_to_content"]
    )
    l_text = causal["config"]["train_length"]
    not_kept = [s for s in relative if not keeps[s]]
    rising = [s for s in relative if not flat[s]]
    return [
        {
            "id": "text-generalisation",
            "chapter": CHAPTER,
            "claim": "Beyond the training length a relative model keeps its "
            "advantage over a model with no positions (bits per byte on "
            "non-overlapping windows up to 16 L).",
            "verdict": ledger.relative_verdict(keeps),
            "mechanism": "A relative score depends on i - j only, so a position "
            f"beyond L = {l_text} meets distances already trained (DeBERTa's clipped "
            "table folds every far distance into its last row). Kept: "
            f"{_names([s for s in relative if keeps[s]])}; not kept: "
            f"{_names(not_kept)}{_why(not_kept)}.",
            "evidence": {"file": "text_causal.json", "keys": ["runs", "config"]},
            "seeds": seeds,
        },
        {
            "id": "text-linguistic",
            "chapter": CHAPTER,
            "claim": "Bracket matching past L: at a closing bracket or quote whose "
            "opener lies beyond L, a relative model's loss with the opener in "
            "the window is below a position-free or absolute model's and below "
            "its own with the opener out of the window.",
            "verdict": "holds" if closers_hold else "fails",
            "mechanism": "DeBERTa's loss at far closers: "
            f"{deberta['far_long']:.2f} nats with the opener in sight (16 L), "
            f"{deberta['far_short']:.2f} without (L); none's "
            f"{rows['none']['far_long']:.2f}, absolute's "
            f"{rows['absolute']['far_long']:.2f}. Its table clips at k = "
            f"{causal['config']['max_relative_positions']}, so an opener beyond L is "
            "one more far byte to it; it is better at closers as it is at every "
            "byte, from the local context.",
            "evidence": {"file": "text_causal.json", "keys": ["runs"]},
            "seeds": seeds,
        },
        {
            "id": "text-gradient",
            "chapter": CHAPTER,
            "claim": "In DeBERTa, the gradients of a positional head (recall the "
            "byte a few back) and of the next-byte loss do not meet on the "
            "shared projections, and training both costs the content loss "
            "nothing (the cosine study).",
            "verdict": "fails" if interferes else "holds",
            "mechanism": "Literally true: DeBERTa adds no position vector to a "
            "hidden state. Not true: c2p and p2c reuse the content query and key "
            "projections, where the gradients of recalling the byte "
            f"{gradients['offset']} back and of the next-byte loss meet (mean "
            f"cosine {min(cosines):.2f} to {max(cosines):.2f} over the seeds); "
            "training both changes the content loss by "
            f"{study['mean_cost_to_content']:+.2f} nats.",
            "evidence": {"file": "text_gradients.json", "keys": ["summary"]},
            "seeds": len(study["seeds"]),
        },
    ]


def records(folder: Path) -> list[dict[str, Any]]:
    """The text records of the ledger, from the results in ``folder``.

    ``python -m relpos.book.results`` writes them into ``claims.json`` with the
    synthetic sweeps' (``relpos.book.experiments.verdicts``).
    """
    folder = Path(folder)

    def read(name: str) -> dict[str, Any]:
        return json.loads((folder / name).read_text(encoding="utf-8"))

    found = seed_claim_records(read("text_causal.json"), read("text_gradients.json"))
    found.insert(1, length_record(read("text_causal_protocol.json")))
    found.append(masked_length_record(read("text_masked.json")))
    return found


__all__ = [
    "BEYOND_L",
    "COSINE",
    "FLAT_BPB",
    "KEPT",
    "RELATIVE",
    "kept_advantage",
    "length_gains",
    "masked_length_record",
    "records",
    "length_record",
    "seed_claim_records",
]
