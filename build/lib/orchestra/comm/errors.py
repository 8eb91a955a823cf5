"""Errors raised by the communication layer."""

from __future__ import annotations

from orchestra.errors import OrchestraError


class DecompositionError(OrchestraError, ValueError):
    """A layout, rank, domain size or halo width does not fit the decomposition."""


class HaloExchangeError(OrchestraError, RuntimeError):
    """A halo exchange was used out of order (``wait`` without ``start``, two ``start``)."""
