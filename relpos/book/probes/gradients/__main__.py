"""``python -m relpos.book.probes.gradients``: the gradient probe (``cli.main``)."""

from .cli import main

main()
