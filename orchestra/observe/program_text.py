"""One SDFG as text that the same program always gives: DaCe's JSON without its per-object ids.

Two builds of the same program differ, in DaCe's JSON, only in what DaCe
numbers or draws afresh each time (``guid``, ``cfg_id``, ``sdfg_id``, the
``hash`` computed over them) and in symbols gt4py names after Python object
addresses (``__k_140711570045648``). :func:`program_text` leaves those out
(addresses become ``_<id>``) and sorts the keys: equal texts, same program.
The tests and benchmark scripts that prove a change keeps the program
compare these texts.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: What DaCe numbers or draws afresh for every object and every build.
_PER_BUILD_KEYS = frozenset({"guid", "cfg_id", "sdfg_id", "hash"})
_OBJECT_ADDRESSES = re.compile(r"_\d{9,}")


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_ids(item) for key, item in value.items() if key not in _PER_BUILD_KEYS}
    if isinstance(value, (list, tuple)):
        return [_without_ids(item) for item in value]
    return value


def program_text(program: Any) -> str:
    """``program`` (an SDFG, or its JSON as a dict) as sorted JSON without per-build ids and object addresses."""
    document = program if isinstance(program, dict) else program.to_json()
    text = json.dumps(_without_ids(document), sort_keys=True, default=str)
    return _OBJECT_ADDRESSES.sub("_<id>", text)
