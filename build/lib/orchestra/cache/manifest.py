"""The manifest stored with each build, and how two sets of build inputs differ.

A manifest records what a build was made from (its canonical inputs, hence its
key), where its library is and the library's checksum. It is written as JSON
next to the build; reading back anything unreadable, truncated or invalid
raises :class:`~orchestra.cache.errors.CorruptEntry`, never a JSON error.

:func:`describe_differences` turns two input dicts into the lines a user reads
when a build cannot be used:

>>> describe_differences(
...     {"per_rank_domain": [48, 48, 1], "scalars": {"da_min": 1.2e6}, "debug_checks": True},
...     {"per_rank_domain": [24, 24, 1], "scalars": {"da_min": 9.9e5}},
... )
['debug_checks: only in expected', 'per_rank_domain: (48, 48, 1) vs (24, 24, 1)', \
'scalars.da_min: 1200000.0 vs 990000.0']
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import socket
from pathlib import Path
from typing import Any, Mapping

from orchestra.cache.errors import CorruptEntry
from orchestra.cache.fingerprint import canonical

# A rendered value longer than this is reported as "changed" instead of printed.
_MAX_RENDERED = 48


@dataclasses.dataclass(frozen=True)
class Manifest:
    """What one build was made from and where its library is.

    ``inputs`` is the canonical form of the inputs whose fingerprint is ``key``;
    ``library`` is the shared library's path relative to the entry folder and
    ``checksum`` its sha256 (filled in by ``BuildStore.publish`` when empty);
    ``files`` the sha256 of every other file a load reads (DaCe's stub
    library, the signature and program SDFGs), by path relative to the entry,
    also filled in by ``publish``.
    """

    key: str
    program: str
    inputs: dict[str, Any]
    library: str
    checksum: str
    created: str
    host: str
    build_seconds: float
    orchestra_version: str
    files: dict[str, str] = dataclasses.field(default_factory=dict)
    #: seconds of each build stage (parse, optimize, compile); empty in manifests written before it was kept
    stage_seconds: dict[str, float] = dataclasses.field(default_factory=dict)

    @classmethod
    def new(
        cls,
        key: str,
        program: str,
        inputs: Mapping[str, Any],
        library: str,
        build_seconds: float,
        orchestra_version: str,
    ) -> Manifest:
        """A manifest for a build made now on this host; the checksum is left for ``publish``."""
        return cls(
            key=key,
            program=program,
            inputs=canonical(dict(inputs)),
            library=library,
            checksum="",
            created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            host=socket.gethostname(),
            build_seconds=float(build_seconds),
            orchestra_version=orchestra_version,
        )

    def to_json(self) -> str:
        """The manifest as indented JSON text with sorted keys."""
        return (
            json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True, allow_nan=False) + "\n"
        )

    @classmethod
    def from_json(cls, text: str, source: Path | str = "<manifest>") -> Manifest:
        """Parse :meth:`to_json` output; anything else raises ``CorruptEntry`` naming ``source``."""
        try:
            data = json.loads(text)
        except ValueError as error:
            raise CorruptEntry(source, f"manifest is not valid JSON ({error})") from error
        if not isinstance(data, dict):
            raise CorruptEntry(source, "manifest is not a JSON object")
        values = {}
        for field in dataclasses.fields(cls):
            if field.name not in data and field.name in _MAY_LACK:
                continue
            if field.name not in data:
                raise CorruptEntry(source, f"manifest lacks the field {field.name!r}")
            values[field.name] = _checked(data[field.name], field.name, source)
        try:
            canonical(values["inputs"])
        except TypeError as error:
            raise CorruptEntry(source, f"manifest inputs are not canonical ({error})") from error
        return cls(**values)

    @classmethod
    def read(cls, path: Path) -> Manifest:
        """Read a manifest file; unreadable or invalid content raises ``CorruptEntry``."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CorruptEntry(path, f"manifest unreadable ({error})") from error
        return cls.from_json(text, source=path)

    def with_checksum(self, checksum: str) -> Manifest:
        """A copy of this manifest with ``checksum`` set."""
        return dataclasses.replace(self, checksum=checksum)


_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "key": str,
    "program": str,
    "inputs": dict,
    "library": str,
    "checksum": str,
    "created": str,
    "host": str,
    "build_seconds": (int, float),
    "orchestra_version": str,
    "files": dict,
    "stage_seconds": dict,
}
#: fields added after manifests were first written: an older manifest without them is still valid
_MAY_LACK = frozenset({"stage_seconds"})


def _checked(value: Any, name: str, source: Path | str) -> Any:
    expected = _FIELD_TYPES[name]
    if not isinstance(value, expected) or isinstance(value, bool):
        raise CorruptEntry(source, f"manifest field {name!r} has the wrong type")
    if name == "files" and not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise CorruptEntry(source, "manifest field 'files' must map paths to checksums")
    if name == "stage_seconds":
        if not all(isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
                   for k, v in value.items()):
            raise CorruptEntry(source, "manifest field 'stage_seconds' must map stage names to seconds")
        return {k: float(v) for k, v in value.items()}
    return float(value) if name == "build_seconds" else value


def describe_differences(expected: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """Human-readable differences between two input dicts, "expected vs found".

    ``expected`` is what this run needs, ``found`` what a build was made with.
    Nested dicts (and dataclass fields) are followed with dotted paths; a value
    too long to print (a source text, a hash) is reported as ``changed``. Lines
    come in sorted path order.
    """
    lines: list[str] = []
    _compare(canonical(dict(expected)), canonical(dict(found)), "", lines)
    return lines


def describe_inputs(inputs: Mapping[str, Any]) -> list[str]:
    """One ``path: value`` line per leaf of ``inputs``, in sorted path order.

    Values too long to print are summarized by length and sha256 prefix:

    >>> describe_inputs({"domain": (24, 24, 4), "source": {"A.f": "x" * 100}})
    ['domain: (24, 24, 4)', "source['A.f']: <str of 100 characters, sha256 09ecb6ebc8bc>"]
    """
    lines: list[str] = []
    _flatten(canonical(dict(inputs)), "", lines)
    return lines


def _flatten(value: Any, path: str, lines: list[str]) -> None:
    if _is_plain_dict(value) and value:
        for key in sorted(value):
            _flatten(value[key], _child_path(path, key), lines)
        return
    if isinstance(value, dict) and "$dataclass" in value:
        _flatten(value["fields"], path, lines)
        return
    rendered = _render(value)
    if len(rendered) > _MAX_RENDERED:
        text = value if isinstance(value, str) else _text(value)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        kind = "str" if isinstance(value, str) else type(value).__name__
        rendered = f"<{kind} of {len(text)} characters, sha256 {digest}>"
    lines.append(f"{path}: {rendered}")


def _compare(expected: Any, found: Any, path: str, lines: list[str]) -> None:
    if _text(expected) == _text(found):
        return
    if _is_plain_dict(expected) and _is_plain_dict(found):
        for key in sorted(set(expected) | set(found)):
            child = _child_path(path, key)
            if key not in found:
                lines.append(f"{child}: only in expected")
            elif key not in expected:
                lines.append(f"{child}: only in found")
            else:
                _compare(expected[key], found[key], child, lines)
        return
    if _same_dataclass(expected, found):
        _compare(expected["fields"], found["fields"], path, lines)
        return
    if _both_nested_lists(expected, found):
        for index, (left, right) in enumerate(zip(expected, found)):
            _compare(left, right, f"{path}[{index}]", lines)
        return
    left, right = _render(expected), _render(found)
    if len(left) > _MAX_RENDERED or len(right) > _MAX_RENDERED:
        lines.append(f"{path} changed")
    else:
        lines.append(f"{path}: {left} vs {right}")


def _text(value: Any) -> str:
    """Exact text of a canonical value (unlike ``==``, tells ``1``, ``1.0``, ``True`` apart)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _is_plain_dict(value: Any) -> bool:
    return isinstance(value, dict) and not any(key.startswith("$") for key in value)


def _same_dataclass(expected: Any, found: Any) -> bool:
    return (
        isinstance(expected, dict)
        and isinstance(found, dict)
        and "$dataclass" in expected
        and expected.get("$dataclass") == found.get("$dataclass")
    )


def _both_nested_lists(expected: Any, found: Any) -> bool:
    if not (isinstance(expected, list) and isinstance(found, list)):
        return False
    if len(expected) != len(found):
        return False
    return any(isinstance(item, (dict, list)) for item in expected + found)


def _child_path(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def _render(value: Any) -> str:
    """A short readable text of a canonical value (tags shown as what they stand for)."""
    if isinstance(value, list):
        inner = ", ".join(_render(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return _render_tag(value)
    return repr(value)


def _render_tag(value: dict[str, Any]) -> str:
    if "$enum" in value:
        return f"{value['$enum'].rsplit('.', 1)[-1]}.{value['name']}"
    if "$float" in value:
        return f"float({value['$float']!r})"
    if "$numpy" in value:
        return f"{value['$numpy']}({_render(value['value'])})"
    if "$dtype" in value:
        return f"dtype({_render(value['$dtype'])})"
    if "$set" in value:
        return "{" + ", ".join(_render(item) for item in value["$set"]) + "}"
    if "$dataclass" in value:
        name = value["$dataclass"].rsplit(".", 1)[-1]
        fields = ", ".join(f"{key}={_render(item)}" for key, item in value["fields"].items())
        return f"{name}({fields})"
    if "$object" in value:
        return f"{value['$object'].rsplit('.', 1)[-1]}({_render(value['value'])})"
    if "$bytes" in value:
        return f"bytes.fromhex({value['$bytes']!r})"
    return "{" + ", ".join(f"{key!r}: {_render(item)}" for key, item in value.items()) + "}"
