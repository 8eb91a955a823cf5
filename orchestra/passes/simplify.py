"""Simplification with a skip list (see ``SIMPLIFY_SKIP`` in the pipeline)."""

from __future__ import annotations

from typing import Any, Iterable


def simplify(sdfg: Any, skip: Iterable[str]) -> None:
    """Run DaCe's simplify pipeline on ``sdfg`` in place, without the passes in ``skip``."""
    from dace.transformation.passes.simplify import SimplifyPass

    SimplifyPass(validate=False, validate_all=False, skip=set(skip), verbose=False).apply_pass(sdfg, {})
