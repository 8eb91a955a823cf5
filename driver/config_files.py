"""What reading a run's configuration files shares: the one error type and how values and files are read.

:mod:`driver.config` (the YAML configuration) and :mod:`driver.namelist` (an
FV3 namelist that overrides it) both raise :class:`ConfigError`, one line
naming the file and the field, and read files with :func:`read_text`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A configuration that cannot be run; the message is one line naming the field."""


def describe(value: Any) -> str:
    """``value`` and its type, for messages: ``'abc' (str)``."""
    return f"{value!r} ({type(value).__name__})"


def read_text(path: Path, what: str) -> str:
    """The text of ``path``; a missing, unreadable or binary file is one ConfigError ("cannot read the <what>")."""
    try:
        return path.read_text()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the {what}: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: cannot read the {what}: not a text file ({error.reason})") from error
