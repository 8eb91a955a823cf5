"""Which debug checks a build injects: the ``ORCHESTRA_DEBUG`` selection and its syntax.

A model developer selects checks with ``ORCHESTRA_DEBUG`` (or
``DaceConfig(debug_checks=DebugChecks.parse(...))``); the optimize stage then
calls :func:`orchestra.passes.debug.insert_debug_checks`, which adds, after every *kernel* of the
program, a small state whose C++ tasklet checks, traces or reports what the
kernel wrote. See ``docs/debugging.md`` for the user guide.

Syntax (whitespace is ignored)::

    ORCHESTRA_DEBUG = item { ";" item }
    item            = check { "," check } [ ":" option { "," option } ]
    option          = key "=" value { "," value }

The options after ``:`` belong to the last check named before it. A
comma-separated token without ``=`` adds a value to the option before it, so
lists need no quoting: ``include=h*,q*`` and ``point=3,4,0``.

=============  ===========================================  =====================
check          options                                      default
=============  ===========================================  =====================
``nan``        ``include``, ``exclude`` (field patterns)    ``include=*``
``negative``   ``fields`` (required), ``exclude``,          ``threshold=0``
               ``threshold`` (a value below it fails)
``trace``      ``point`` (i,j,k array index), ``include``,  centre of each field
               ``exclude``
``progress``   none
=============  ===========================================  =====================

Examples::

    ORCHESTRA_DEBUG=nan,progress
    ORCHESTRA_DEBUG="nan:exclude=tmp*;negative:fields=h,q*,threshold=0;trace:point=3,4,0"

The selection is part of the cache key: :meth:`DebugChecks.as_key` holds
every option, and equal selections have equal keys whatever their spelling.

>>> checks = DebugChecks.parse("progress, nan:include=h*,q*")
>>> checks.checks
('nan', 'progress')
>>> checks.nan.include
('h*', 'q*')
>>> DebugChecks.parse(checks.spec()) == checks
True
>>> DebugChecks.parse("nan,nann")
Traceback (most recent call last):
...
orchestra.errors.ConfigurationError: unknown debug check(s) nann in ORCHESTRA_DEBUG; valid checks are: nan, negative, trace, progress
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Optional

from orchestra.errors import ConfigurationError

DEBUG_VARIABLE = "ORCHESTRA_DEBUG"
CHECK_NAMES = ("nan", "negative", "trace", "progress")

#: Exit status of a process ended by a failing check (documented in docs/debugging.md).
DEBUG_EXIT_CODE = 86

Patterns = tuple[str, ...]


def _patterns(value: Any, check: str, option: str) -> Patterns:
    values = (value,) if isinstance(value, str) else tuple(value)
    if not values or any(not isinstance(v, str) or not v.strip() for v in values):
        raise ConfigurationError(
            f"{DEBUG_VARIABLE}: {check}:{option} needs one or more field-name patterns, got {value!r}"
        )
    return tuple(v.strip() for v in values)


@dataclasses.dataclass(frozen=True)
class NanCheck:
    """Fail on NaN or Inf written to a field matching ``include`` and not ``exclude``."""

    include: Patterns = ("*",)
    exclude: Patterns = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "include", _patterns(self.include, "nan", "include"))
        object.__setattr__(self, "exclude", _patterns(self.exclude, "nan", "exclude") if self.exclude else ())


@dataclasses.dataclass(frozen=True)
class NegativeCheck:
    """Fail on a value below ``threshold`` written to a field matching ``fields``."""

    fields: Patterns = ()
    exclude: Patterns = ()
    threshold: float = 0.0

    def __post_init__(self) -> None:
        if not self.fields:
            raise ConfigurationError(
                f"{DEBUG_VARIABLE}: the negative check needs fields=PATTERNS naming the fields that "
                f"must stay non-negative, e.g. {DEBUG_VARIABLE}='negative:fields=h,q*'"
            )
        object.__setattr__(self, "fields", _patterns(self.fields, "negative", "fields"))
        object.__setattr__(self, "exclude", _patterns(self.exclude, "negative", "exclude") if self.exclude else ())
        try:
            threshold = float(self.threshold)
        except (TypeError, ValueError):
            threshold = math.nan
        if not math.isfinite(threshold):
            raise ConfigurationError(
                f"{DEBUG_VARIABLE}: negative:threshold must be a finite number, got {self.threshold!r}"
            )
        object.__setattr__(self, "threshold", threshold + 0.0)  # -0.0 -> 0.0: one key

    @property
    def include(self) -> Patterns:
        return self.fields


@dataclasses.dataclass(frozen=True)
class TraceCheck:
    """Print the value at ``point`` (array index) of every matching field a kernel writes."""

    point: Optional[tuple[int, ...]] = None
    include: Patterns = ("*",)
    exclude: Patterns = ()

    def __post_init__(self) -> None:
        if self.point is not None:
            try:
                point = tuple(int(str(v).strip()) for v in self.point)
            except (TypeError, ValueError):
                point = ()
            if len(point) != 3 or any(v < 0 for v in point):
                raise ConfigurationError(
                    f"{DEBUG_VARIABLE}: trace:point must be three non-negative integers i,j,k "
                    f"(an index into the field arrays, halo included), got {self.point!r}"
                )
            object.__setattr__(self, "point", point)
        object.__setattr__(self, "include", _patterns(self.include, "trace", "include"))
        object.__setattr__(self, "exclude", _patterns(self.exclude, "trace", "exclude") if self.exclude else ())


@dataclasses.dataclass(frozen=True)
class ProgressCheck:
    """Print one line (program, kernel, sequence number) after every kernel."""


_CHECK_TYPES: dict[str, type] = {
    "nan": NanCheck,
    "negative": NegativeCheck,
    "trace": TraceCheck,
    "progress": ProgressCheck,
}
_SCALAR_OPTIONS = {"threshold"}


def _options_of(check: str) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(_CHECK_TYPES[check]))


@dataclasses.dataclass(frozen=True)
class DebugChecks:
    """Which checks to inject, with their options; all empty means a normal build.

    Build one with :meth:`parse` (the ``ORCHESTRA_DEBUG`` syntax, see the
    module docstring), :meth:`from_environment`, or directly, e.g.
    ``DebugChecks(nan=NanCheck(), negative=NegativeCheck(fields=("h",)))``.
    """

    nan: Optional[NanCheck] = None
    negative: Optional[NegativeCheck] = None
    trace: Optional[TraceCheck] = None
    progress: Optional[ProgressCheck] = None

    def __post_init__(self) -> None:
        for name, kind in _CHECK_TYPES.items():
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise ConfigurationError(f"DebugChecks.{name} must be a {kind.__name__} or None, got {value!r}")

    # --------------------------------------------------------------- parsing
    @classmethod
    def parse(cls, text: str) -> "DebugChecks":
        """Parse the ``ORCHESTRA_DEBUG`` syntax; any mistake is a :class:`ConfigurationError`."""
        selected: dict[str, dict[str, list[str]]] = {}
        with_options: set[str] = set()
        for item in (text or "").split(";"):
            if not item.strip():
                continue
            names_part, _, options_part = item.partition(":")
            names = [name.strip() for name in names_part.split(",") if name.strip()]
            unknown = [name for name in names if name not in CHECK_NAMES]
            if unknown:
                raise ConfigurationError(
                    f"unknown debug check(s) {', '.join(unknown)} in {DEBUG_VARIABLE}; "
                    f"valid checks are: {', '.join(CHECK_NAMES)}"
                )
            if not names:
                raise ConfigurationError(
                    f"{DEBUG_VARIABLE}: options {options_part!r} follow no check name in {item.strip()!r}; "
                    f"write CHECK:OPTION=VALUE, e.g. nan:include=h*"
                )
            for name in names:
                selected.setdefault(name, {})
            if options_part.strip():
                owner = names[-1]
                if owner in with_options:
                    raise ConfigurationError(
                        f"{DEBUG_VARIABLE}: options for {owner} are given twice; give them once, "
                        f"e.g. {owner}:a=1,b=2"
                    )
                with_options.add(owner)
                selected[owner] = cls._parse_options(owner, options_part)
        return cls._from_options(selected)

    @staticmethod
    def _parse_options(check: str, text: str) -> dict[str, list[str]]:
        valid = _options_of(check)
        options: dict[str, list[str]] = {}
        current: Optional[str] = None
        for token in (token.strip() for token in text.split(",")):
            if not token:
                continue
            if "=" in token:
                key, _, value = (part.strip() for part in token.partition("="))
                if key not in valid:
                    hint = f"valid options are: {', '.join(valid)}" if valid else "it takes no options"
                    raise ConfigurationError(f"unknown option {key!r} of debug check {check} in {DEBUG_VARIABLE}; {hint}")
                if key in options:
                    raise ConfigurationError(f"{DEBUG_VARIABLE}: option {check}:{key} is given twice")
                options[key] = [value] if value else []
                current = key
            elif current is None or current in _SCALAR_OPTIONS:
                raise ConfigurationError(
                    f"{DEBUG_VARIABLE}: {check}: expected OPTION=VALUE, got {token!r}"
                    + (f" (valid options: {', '.join(valid)})" if valid else " (it takes no options)")
                )
            else:
                options[current].append(token)
        return options

    @classmethod
    def _from_options(cls, selected: dict[str, dict[str, Any]]) -> "DebugChecks":
        made = {}
        for name, options in selected.items():
            values: dict[str, Any] = {}
            for key, value in options.items():
                if key in _SCALAR_OPTIONS:
                    value = value[0] if isinstance(value, list) and len(value) == 1 else value
                values[key] = tuple(value) if isinstance(value, list) else value
            made[name] = _CHECK_TYPES[name](**values)
        return cls(**made)

    @classmethod
    def from_environment(cls) -> "DebugChecks":
        """The checks selected by ``ORCHESTRA_DEBUG`` (none when unset or empty)."""
        return cls.parse(os.environ.get(DEBUG_VARIABLE, ""))

    @classmethod
    def from_key(cls, key: dict) -> "DebugChecks":
        """The inverse of :meth:`as_key` (e.g. to rebuild the checks of a cached build)."""
        unknown = [name for name in key if name not in CHECK_NAMES]
        if unknown:
            raise ConfigurationError(f"unknown debug check(s) {', '.join(unknown)} in a cache key")
        return cls._from_options({name: dict(options) for name, options in key.items()})

    # ------------------------------------------------------------ identity
    @property
    def checks(self) -> tuple[str, ...]:
        """Names of the selected checks, sorted."""
        return tuple(sorted(name for name in CHECK_NAMES if getattr(self, name) is not None))

    def __bool__(self) -> bool:
        return bool(self.checks)

    def as_key(self) -> dict:
        """Canonical, JSON-serialisable form with every option (enters the cache key)."""
        key = {}
        for name in self.checks:
            check = getattr(self, name)
            key[name] = {
                field.name: list(value) if isinstance(value, tuple) else value
                for field in dataclasses.fields(check)
                for value in [getattr(check, field.name)]
            }
        return key

    def spec(self) -> str:
        """The selection in ``ORCHESTRA_DEBUG`` syntax (parses back to an equal object)."""
        items = []
        for name, options in self.as_key().items():
            parts = []
            for key, value in options.items():
                if value is None or value == []:
                    continue
                text = ",".join(str(v) for v in value) if isinstance(value, list) else repr(value)
                parts.append(f"{key}={text}")
            items.append(name + (":" + ",".join(parts) if parts else ""))
        return ";".join(items)

    def __str__(self) -> str:
        return self.spec() or "(no debug checks)"
