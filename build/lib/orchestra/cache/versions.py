"""Versions of orchestra and its toolchain, read without importing the packages.

Versions belong in every cache key (a new DaCe generates different code), and
``orchestra info`` prints them; reading them from the installed distributions'
metadata keeps both fast (importing DaCe takes seconds).

>>> sorted(toolchain_versions())
['dace', 'gt4py', 'orchestra']
"""

from __future__ import annotations

import configparser
import importlib.metadata
from pathlib import Path

_SOURCE_SETUP_CFG = Path(__file__).resolve().parents[2] / "setup.cfg"


def distribution_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None if it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def orchestra_version() -> str:
    """orchestra's version: installed metadata, else the source checkout's ``setup.cfg``."""
    installed = distribution_version("orchestra")
    if installed is not None:
        return installed
    parser = configparser.ConfigParser()
    if parser.read(_SOURCE_SETUP_CFG) and parser.has_option("metadata", "version"):
        return parser.get("metadata", "version")
    return "unknown"


def toolchain_versions() -> dict[str, str]:
    """Versions of orchestra, DaCe and gt4py ('not installed' where missing)."""
    return {
        "orchestra": orchestra_version(),
        "dace": distribution_version("dace") or "not installed",
        "gt4py": distribution_version("gt4py") or "not installed",
    }
