"""``python -m relpos.book.text``: a text sweep from the command line (see ``cli``)."""

from .cli import main

if __name__ == "__main__":
    main()
