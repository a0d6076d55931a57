"""``python -m relpos.book.probes.positions``: the probe's command."""

from .cli import main

if __name__ == "__main__":
    main()
