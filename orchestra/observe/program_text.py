"""One SDFG as text that the same program always gives: DaCe's JSON without its per-object ids.

Two builds of the same program differ, in DaCe's JSON, in the ``guid`` DaCe
draws afresh for every object and in symbols gt4py names after Python object
addresses (``__k_140711570045648``). :func:`program_text` leaves those out
(addresses become ``_<id>``) and sorts the keys: equal texts, same program.
DaCe's region numbering (``cfg_id``, ``sdfg_id``) is kept unless asked
otherwise: a comparison of two programs renumbered at different times
(``scripts/optimize_variants.py``) leaves it out. The tests and benchmark
scripts that prove a change keeps the program compare these texts.
"""

from __future__ import annotations

import json
import re
from typing import Any

_RANDOM_IDS = frozenset({"guid"})  #: drawn afresh for every object
_NUMBERING = frozenset({"cfg_id", "sdfg_id"})  #: DaCe's region numbering
_OBJECT_ADDRESSES = re.compile(r"_\d{9,}")


def _without(value: Any, keys: frozenset) -> Any:
    if isinstance(value, dict):
        return {key: _without(item, keys) for key, item in value.items() if key not in keys}
    if isinstance(value, (list, tuple)):
        return [_without(item, keys) for item in value]
    return value


def program_text(program: Any, numbering: bool = True) -> str:
    """``program`` (an SDFG, or its JSON as a dict) as sorted JSON without ``guid``s and object addresses;
    with ``numbering=False`` also without DaCe's region numbering."""
    document = program if isinstance(program, dict) else program.to_json()
    keys = _RANDOM_IDS if numbering else _RANDOM_IDS | _NUMBERING
    text = json.dumps(_without(document, keys), sort_keys=True, default=str)
    return _OBJECT_ADDRESSES.sub("_<id>", text)
