"""Debug checks injected into the compiled program (selection only, for now).

``ORCHESTRA_DEBUG`` is a comma-separated list of check names, e.g.
``ORCHESTRA_DEBUG=nan,negative``. An unknown name is a clear error.
"""

from __future__ import annotations

import dataclasses
import os

from orchestra.errors import ConfigurationError

DEBUG_VARIABLE = "ORCHESTRA_DEBUG"
CHECK_NAMES = ("nan", "negative", "trace", "progress")


@dataclasses.dataclass(frozen=True)
class DebugChecks:
    """Which checks to inject; empty means a normal build."""

    checks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [name for name in self.checks if name not in CHECK_NAMES]
        if unknown:
            raise ConfigurationError(
                f"unknown debug check(s) {', '.join(unknown)} in {DEBUG_VARIABLE}; "
                f"valid checks are: {', '.join(CHECK_NAMES)}"
            )

    @classmethod
    def parse(cls, text: str) -> "DebugChecks":
        names = tuple(sorted({part.strip() for part in text.split(",") if part.strip()}))
        return cls(names)

    @classmethod
    def from_environment(cls) -> "DebugChecks":
        return cls.parse(os.environ.get(DEBUG_VARIABLE, ""))

    def __bool__(self) -> bool:
        return bool(self.checks)

    def as_key(self) -> dict:
        return {"checks": list(self.checks)}
