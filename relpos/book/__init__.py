"""The book's machinery on the core: exercise checks, figures, results, experiments.

Nothing in the core (``relpos`` without ``.book``) imports this package, and
``import relpos`` loads neither it nor matplotlib. It needs the ``book`` extra
(``pip install "relpos[book]"``: matplotlib, numpy, tqdm and altair):

- ``relpos.book.exercises``: ``check(label, answer)`` for every exercise of the book;
- ``relpos.book.plot``: the book's figures, each a function returning a Figure;
- ``relpos.book.interactive``: the central figures as Vega-Lite charts (Altair)
  for the website, each with its still from ``plot``;
- ``relpos.book.gradients``: which tensors each score term sends gradient to;
- ``relpos.book.results``: the committed benchmark and sweep JSON (package data);
- ``relpos.book.experiments``: tiny models trained on synthetic tasks
  (``python -m relpos.book.experiments``);
- ``relpos.book.text``: byte-level language models, causal and masked, on the
  Python standard library's docstrings or source, trained at one context and
  evaluated at longer ones (``python -m relpos.book.text``);
- ``relpos.book.bench``: the speed and memory benchmark
  (``python -m relpos.book.bench``).
"""
