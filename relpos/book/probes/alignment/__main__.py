"""``python -m relpos.book.probes.alignment``: the probe's sweep (see ``cli``)."""

from .cli import main

if __name__ == "__main__":
    main()
