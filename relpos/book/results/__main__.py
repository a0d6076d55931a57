"""``python -m relpos.book.results``: rewrite the ledger of claims from the results."""

from .build import main

main()
