"""The probe of chapter 1's claim 3, linguistic alignment: minimal pairs inside L.

- ``design``: the prediction, falsifier, arms and mechanism (written first);
- ``grammar``: the generated language (agreement across attractors, Dyck-2),
  its streams and its test items;
- ``items``: the committed items and their provenance;
- ``run``: one run (train on the grammar, score every item's margin);
- ``sweep``: every arm tuned, ten seeds, resumable runs;
- ``summary``: accuracy by distance and offset, the paired comparisons;
- ``plot``: accuracy against the distance;
- ``live``: a run small enough for the chapter's live cell;
- ``cli``: ``python -m relpos.book.probes.alignment`` (``make probe-alignment``).

The verdict's rule is ``relpos.book.experiments.verdicts.alignment_probe``.
"""
