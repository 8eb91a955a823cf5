"""Why a build does not fit: the few differences that explain the rest, in words.

A changed domain shows up as dozens of differences between two builds'
inputs (every stencil of that size under another name, every array's shape
and strides); a ``Run`` job's miss listed them all on one line, the cause
buried in it. :func:`likely_causes` reads the two input dicts and says first
what a model developer changed: a stencil's domain, origin or code, a
function's source, a folded value, a compile-time argument, the decomposition,
the backend, the build options, the toolchain; array layouts that differ
follow in one line. ``orchestra cache explain`` keeps the whole list.

>>> built = {"arguments": {"q": {"shape": [64, 64, 20]}}, "nested": {"FrozenStencil(flux, domain=(64, 64, 20))":
...          {"stencil": "model.flux", "gt_id": "a1", "domain": [64, 64, 20], "origin": [0, 0, 0]}}}
>>> asked = {"arguments": {"q": {"shape": [48, 48, 20]}}, "nested": {"FrozenStencil(flux, domain=(48, 48, 20))":
...          {"stencil": "model.flux", "gt_id": "a1", "domain": [48, 48, 20], "origin": [0, 0, 0]}}}
>>> likely_causes(asked, built)
['the domain of stencil model.flux changed from (64, 64, 20) to (48, 48, 20)', 'arrays of another layout: q shape (64, 64, 20) -> (48, 48, 20)']
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

#: top-level inputs whose change is a cause in itself, and how to say it
_SETTINGS = {
    "code_path": "the rank's code path (decomposition) differs",
    "backend": "the backend differs",
    "pipeline": "the build options differ (debug checks, profile, passes, split part)",
    "toolchain": "the compiler, its flags or DaCe's settings differ",
    "versions": "orchestra, DaCe or gt4py (or orchestra's own sources) differ",
}


def likely_causes(asked: Mapping[str, Any], built: Mapping[str, Any], limit: int = 6) -> list[str]:
    """At most ``limit`` sentences: what changed between ``built`` (a build's inputs) and ``asked`` (this call's)."""
    causes = [*_stencil_changes(asked, built), *_source_changes(asked, built), *_value_changes(asked, built)]
    causes += [sentence for key, sentence in _SETTINGS.items() if asked.get(key) != built.get(key)]
    layouts = _layout_changes(asked, built)
    if layouts:
        shown = ", ".join(layouts[:3]) + (f" and {len(layouts) - 3} more" if len(layouts) > 3 else "")
        causes.append(f"arrays of another layout: {shown}")
    return causes[:limit]


def _stencils(inputs: Mapping[str, Any], where: dict[str, str]) -> dict[str, list[dict]]:
    """Every stencil identity of the call tree, by the stencil's definition (``module.name``).

    ``where`` gets, for a stencil a nested component calls, that component's call path.
    """
    found: dict[str, list[dict]] = {}
    nodes = [("", inputs.get("nested", {})),
             *((path, node.get("callees", {})) for path, node in inputs.get("call_tree", {}).items())]
    for path, callees in nodes:
        for identity in callees.values():
            if isinstance(identity, dict) and "stencil" in identity:
                entries = found.setdefault(identity["stencil"], [])
                if identity not in entries:
                    entries.append(identity)
                known = where.get(identity["stencil"])
                if path and (known is None or (path.count("#"), len(path)) < (known.count("#"), len(known))):
                    where[identity["stencil"]] = path  # the plainest call path naming it
    return found


def _stencil_changes(asked: Mapping[str, Any], built: Mapping[str, Any]) -> Iterator[str]:
    where: dict[str, str] = {}
    old, new = _stencils(built, where), _stencils(asked, where)

    def _named(stencil: str) -> str:
        return f"stencil {stencil} (called in {where[stencil]})" if stencil in where else f"stencil {stencil}"

    for name in sorted(set(old) & set(new)):
        if old[name] == new[name]:
            continue
        for part, words in (("domain", "the domain"), ("origin", "the origin")):
            before = sorted({_tuple(entry.get(part)) for entry in old[name]})
            after = sorted({_tuple(entry.get(part)) for entry in new[name]})
            if before != after:
                yield f"{words} of {_named(name)} changed from {_listed(before)} to {_listed(after)}"
        if {entry.get("gt_id") for entry in old[name]} != {entry.get("gt_id") for entry in new[name]}:
            yield f"the code of {_named(name)} changed (its definition, the functions it calls, or its externals)"
    for name in sorted(set(new) - set(old)):
        yield f"stencil {name} is called now and was not when built"
    for name in sorted(set(old) - set(new)):
        yield f"stencil {name} was called when built and is not now"


def _source_changes(asked: Mapping[str, Any], built: Mapping[str, Any]) -> Iterator[str]:
    old, new = built.get("source", {}), asked.get("source", {})
    for name in sorted(set(old) | set(new)):
        if name in old and name in new and old[name] != new[name]:
            yield f"the source of {name} changed"
        elif name in new and name not in old:
            yield f"{name} is part of the program now and was not when built"


def _value_changes(asked: Mapping[str, Any], built: Mapping[str, Any]) -> Iterator[str]:
    scopes = [("scalars", "", asked.get("scalars", {}), built.get("scalars", {})),
              ("compiletime_args", "compile-time argument ", asked.get("compiletime_args", {}),
               built.get("compiletime_args", {}))]
    for path, node in asked.get("call_tree", {}).items():
        scopes.append(("call_tree", f"{path}: ", node.get("scalars", {}),
                       built.get("call_tree", {}).get(path, {}).get("scalars", {})))
    for _kind, prefix, new, old in scopes:
        for name in sorted(set(old) & set(new)):
            if old[name] != new[name]:
                yield f"{prefix}{name} was {old[name]!r} when built, is {new[name]!r} now"


def _layout_changes(asked: Mapping[str, Any], built: Mapping[str, Any]) -> list[str]:
    changes = []
    for group in ("arguments", "closure_arrays"):
        old, new = built.get(group, {}), asked.get(group, {})
        for name in sorted(set(old) & set(new)):
            before, after = old[name], new[name]
            if not (isinstance(before, dict) and isinstance(after, dict)) or before == after:
                continue
            part = next((key for key in ("shape", "dtype", "strides", "storage", "scalar")
                         if before.get(key) != after.get(key)), None)
            if part is not None:
                changes.append(f"{name} {part} {_shown(before.get(part))} -> {_shown(after.get(part))}")
    return changes


def _tuple(value: Any) -> Any:
    return tuple(_tuple(item) for item in value) if isinstance(value, (list, tuple)) else value


def _shown(value: Any) -> str:
    return str(_tuple(value))


def _listed(values: list) -> str:
    return " and ".join(str(value) for value in values)
