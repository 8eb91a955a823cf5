"""Importing an FV3 namelist (``--namelist input.nml``): the configuration fields it sets.

The driver reads three groups: ``&fv_core_nml`` (``npx``, ``npy``, ``npz``,
``layout``, ``n_split``), ``&coupler_nml`` (``dt_atmos``, ``days``, ``hours``)
and ``&test_case_nml`` (``test_case``, ``alpha`` in radians); other groups and
variables are FV3's and are ignored. A file is refused, with one
:class:`~driver.config.ConfigError` line naming it, when it

- cannot be read, or is not text;
- is not a valid Fortran namelist (an unterminated string, a group without
  its closing ``/``, ...), with the line of an unterminated string;
- holds none of the three groups (a plain-text or YAML file given by mistake
  parses as an empty namelist and would otherwise change nothing);
- repeats one of the three groups (which copy would win is not obvious);
- gives a value of the wrong kind (``days = 'abc'``, ``npx = 24.5``,
  ``days = inf``).

Ranges (``npx = 1``, ``days = -1``) are checked afterwards with the rest of
the configuration, by :func:`driver.config.config_from_dict`.
"""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path
from typing import Any, Optional

from driver.config_files import ConfigError, describe, read_text

#: Namelist groups the driver reads.
GROUPS = ("fv_core_nml", "coupler_nml", "test_case_nml")


def namelist_fields(path: Path) -> dict[str, Any]:
    """The configuration fields the namelist at ``path`` sets (see the module docstring)."""
    groups = _read_groups(path)
    fields: dict[str, Any] = {}
    core, coupler, case = (groups.get(name, {}) for name in GROUPS)
    number = _Numbers(path)
    if "npx" in core:
        npx = number.integer("fv_core_nml", "npx", core["npx"])
        if core.get("npy", npx) != npx:
            raise ConfigError(f"{path}: fv_core_nml npx={npx} and npy={core['npy']} differ; cube tiles are square")
        fields["resolution"] = npx - 1
    if "npz" in core:
        fields["nz"] = number.integer("fv_core_nml", "npz", core["npz"])
    if "layout" in core:
        layout = core["layout"]
        if not isinstance(layout, list) or len(layout) != 2 or layout[0] != layout[1]:
            raise ConfigError(f"{path}: fv_core_nml layout: expected two equal integers (e.g. 2, 2), got {layout!r}")
        fields["layout"] = number.integer("fv_core_nml", "layout", layout[0])
    if "n_split" in core:
        fields["n_substeps"] = number.integer("fv_core_nml", "n_split", core["n_split"])
    if "dt_atmos" in coupler:
        fields["dt"] = number.real("coupler_nml", "dt_atmos", coupler["dt_atmos"])
    if "days" in coupler or "hours" in coupler:
        days = number.real("coupler_nml", "days", coupler.get("days", 0))
        hours = number.real("coupler_nml", "hours", coupler.get("hours", 0))
        fields["days"] = days + hours / 24.0
    if "test_case" in case:
        fields["test_case"] = number.integer("test_case_nml", "test_case", case["test_case"])
    if "alpha" in case:
        fields["alpha_degrees"] = math.degrees(number.real("test_case_nml", "alpha", case["alpha"]))
    return fields


def _read_groups(path: Path) -> dict[str, Any]:
    """The groups of :data:`GROUPS` the file holds, each once; every defect is one ConfigError."""
    import f90nml

    text = read_text(path, "namelist")
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # f90nml prints its tokenizer table on some errors
            namelist = f90nml.reads(text)
    except Exception as error:  # f90nml raises ValueError, AssertionError, StopIteration, ... on bad text
        raise ConfigError(f"{path}: not a valid Fortran namelist: {_syntax_problem(text, error)}") from error
    found = list(namelist.keys())
    if not any(name in GROUPS for name in found):
        seen = ", ".join(f"&{name}" for name in found) or "no '&group ... /' block at all"
        raise ConfigError(
            f"{path}: not an FV3 namelist for this driver: it holds none of "
            f"{', '.join('&' + name for name in GROUPS)} (found: {seen})"
        )
    for name in GROUPS:
        if found.count(name) > 1:
            raise ConfigError(f"{path}: the group &{name} appears {found.count(name)} times; keep one")
    return {name: namelist[name] for name in GROUPS if name in namelist}


def _syntax_problem(text: str, error: Exception) -> str:
    """What is wrong with a namelist f90nml could not parse, in a few words."""
    line = unterminated_string_line(text)
    if line is not None:
        return f"line {line}: a string is not terminated (its closing quote is missing)"
    detail = " ".join(str(error).split()) or type(error).__name__
    if detail.startswith("End-of-file"):
        return f"{detail} (a group is not closed: add a line with '/' after its last variable)"
    return detail


def unterminated_string_line(text: str) -> Optional[int]:
    """The first line (1-based) where a quoted string is opened and not closed, else None.

    ``!`` starts a comment outside strings; a doubled quote inside a string
    is the quote character itself.

    >>> unterminated_string_line("&g\\n x = 'it''s'  ! don't\\n y = 'open\\n/\\n")
    3
    >>> unterminated_string_line("&g\\n x = 'closed'\\n/\\n") is None
    True
    """
    for number, line in enumerate(text.splitlines(), start=1):
        quote: Optional[str] = None
        index = 0
        while index < len(line):
            char = line[index]
            if quote is None and char == "!":
                break
            if quote is None and char in "'\"":
                quote = char
            elif char == quote:
                if line[index + 1 : index + 2] == quote:
                    index += 1  # a doubled quote stands for itself
                else:
                    quote = None
            index += 1
        if quote is not None:
            return number
    return None


class _Numbers:
    """Kind checks for namelist values, each failure one ConfigError naming the file, group and variable."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _fail(self, group: str, name: str, expected: str, value: Any) -> ConfigError:
        return ConfigError(f"{self.path}: {group} {name}: expected {expected}, got {describe(value)}")

    def integer(self, group: str, name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(group, name, "an integer", value)
        return value

    def real(self, group: str, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self._fail(group, name, "a finite number", value)
        return float(value)
