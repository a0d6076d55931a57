"""``python -m relpos.book.interactive``: write the trained tables of chapter 3.

Trains one tiny DeBERTa model per span k (seeded, deterministic, one thread; about
40 s on a laptop CPU) and writes ``relpos/book/results/trained_tables.json`` with
the command and the machine it ran on (``--output`` elsewhere).
"""

from .table import main

if __name__ == "__main__":
    main()
