"""Probes: each of chapter 1's four claims tested as the book states it.

A probe is designed before it runs: its module ``design`` holds the
prediction, the falsifier, the arms and the mechanism as plain constants (so
git history shows them before any result), and its runner trains on the
experiments engine under the protocol of chapter 12 (rates tuned per cell on
two tuning seeds, ten measured seeds, paired tests, bootstrap intervals). Its
runs are committed under ``relpos/book/results/probes/<probe>/runs/``, keyed on
the probe's own schema, so a sweep resumes across sessions and versions.

- ``positions``: claim 1, generalisation across positions (a rule supervised
  in the first half of each window, scored in the second half; and the
  data-efficiency curve from 8 training sequences).
"""
