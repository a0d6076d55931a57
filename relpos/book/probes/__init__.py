"""Probes: one experiment per claim of chapter 1, designed before it is run.

Each probe is a package holding its design (``design.py``: the prediction, the
falsifier, the arms and the mechanism, written before any result), its data,
its runner and its summary; its runs are committed under
``relpos/book/results/probes/<probe>/runs/`` so a sweep resumes across sessions.
"""
