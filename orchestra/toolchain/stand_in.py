"""A DaCe function replaced by orchestra's stand-in for the duration of a ``with`` block, if it is the one expected.

orchestra's stand-ins (:mod:`.line_info`, :mod:`.trivial_conditions`) give
the answers of the DaCe function they replace with less work. Each was
written against one DaCe version's function, recognised by what its code
uses; :func:`standing_in` installs a stand-in only over that function (a
nested block finds it installed and does nothing), and puts DaCe's back on
leaving the outermost block.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator


@contextlib.contextmanager
def standing_in(module: Any, name: str, stand_in: Callable, recognizes: Callable[[Any], bool]) -> Iterator[None]:
    """Inside the block, ``module.name`` is ``stand_in`` if ``recognizes`` the function found there."""
    found = getattr(module, name, None)
    if found is stand_in or not recognizes(found):
        yield
        return
    setattr(module, name, stand_in)
    try:
        yield
    finally:
        setattr(module, name, found)
