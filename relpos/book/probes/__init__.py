"""The probes of issue 38: for each of chapter 1's four claims, a test built for it.

Each probe is a package of its own (``relpos.book.probes.<probe>``) whose
``design`` module states, before anything is run, what the claim predicts
(``PREDICTION``), what would falsify it (``FALSIFIER``), the arms compared
(``ARMS``) and the mechanism measured beside the verdict (``MECHANISM``); git
history shows those sentences before any result. Each writes its runs, one
small JSON per run, to ``relpos/book/results/probes/<probe>/runs/`` (committed,
so a sweep resumes across sessions) and its result to
``relpos/book/results/probes/<probe>.json``.

- ``positions``: claim 1, generalisation across positions (a rule supervised
  in the first half of each window, scored in the second half; and the
  data-efficiency curve from 8 training sequences).
- ``alignment``: claim 3, linguistic alignment (minimal pairs from a generated
  grammar, agreement across attractors and Dyck-2, at controlled distances and
  offsets inside L).
- ``gradients``: claim 4, cleaner gradient flow (positions added to the input,
  as TUPE's untied term or as DeBERTa's terms; the content cost of a position
  objective learned to a matched level).
"""
