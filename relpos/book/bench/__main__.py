"""``python -m relpos.book.bench``: the command line and its ``--_measure-memory`` mode.

Running the package as a module hands ``sys.argv`` to
:func:`relpos.book.bench.cli.main`,
which either runs the whole benchmark and prints its table or, in the internal
child mode the CPU memory measurement spawns, measures one case and prints one
marked JSON line for the parent to read.
"""

from .cli import main

if __name__ == "__main__":
    main()
