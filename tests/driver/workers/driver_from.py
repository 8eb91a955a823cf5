"""MPI worker: run the driver from another copy of the ``driver`` package.

Usage: python driver_from.py SOURCE_FOLDER CONFIG [driver arguments...]
SOURCE_FOLDER holds a (possibly edited) ``driver/`` package; it goes first on
``sys.path``, so a model developer's edit is what runs.
"""

import sys

if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    import driver

    assert driver.__file__.startswith(sys.argv[1]), f"driver imported from {driver.__file__}, not {sys.argv[1]}"
    from driver.__main__ import main

    sys.exit(main(sys.argv[2:]))
