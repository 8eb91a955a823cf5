"""Which orchestrated calls of a split build run their Python body.

A split build (docs/orchestration.md, "Split builds") runs some orchestrated
calls as their Python body, as ``Python`` mode does, so that the orchestrated
components they call are built and run as programs of their own, and an edit
rebuilds only the program holding it. Two settings choose those calls:

* ``DaceConfig.split_depth = N``: every call less than N orchestrated calls
  deep (the same cut everywhere in the call tree);
* ``DaceConfig.split_at = ("Hyperdiffusion", ...)``: every call whose object
  holds, at any depth of its attributes, an orchestrated object of a named
  class. The named components become programs of their own; the calls on the
  way to them run as Python; everything else stays as large as before (a
  sibling of a named component is one program with all it calls).

:func:`named_component_below` finds the held component for ``split_at``: it
walks the object's attributes (and lists, tuples and dict values of them)
through orchestrated objects only, so it follows the model's component tree,
not arbitrary data.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional


def _orchestrated(value: Any) -> bool:
    return "__orchestra_programs__" in getattr(value, "__dict__", {})


def named_component_below(obj: Any, names: tuple[str, ...]) -> Optional[str]:
    """The attribute path to an orchestrated object below ``obj`` whose class is in ``names`` (None: none).

    E.g. ``"stages[0].tendencies.hyperdiffusion"``; ``obj`` itself does not count.
    """
    if not names or obj is None:
        return None
    seen = {id(obj)}
    frontier: list[tuple[Any, str]] = [(obj, "")]
    while frontier:
        current, path = frontier.pop(0)  # breadth first: the shortest path is named
        for name, attribute in getattr(current, "__dict__", {}).items():
            for index, item in _items(attribute):
                if not _orchestrated(item) or id(item) in seen:
                    continue
                seen.add(id(item))
                where = f"{path}.{name}{index}" if path else f"{name}{index}"
                if type(item).__name__ in names:
                    return where
                frontier.append((item, where))
    return None


def _items(attribute: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(attribute, (list, tuple)):
        yield from ((f"[{index}]", item) for index, item in enumerate(attribute))
    elif isinstance(attribute, dict):
        yield from ((f"[{key!r}]", item) for key, item in attribute.items())
    else:
        yield "", attribute
