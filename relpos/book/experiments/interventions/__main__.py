"""``python -m relpos.book.experiments.interventions``: every intervention, one JSON."""

from .cli import main

if __name__ == "__main__":
    main()
