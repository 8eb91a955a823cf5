"""Fixtures of the stencil tests."""

from __future__ import annotations

import pytest
from gt4py.cartesian import config as gt_config


@pytest.fixture
def gt_cache(tmp_path, monkeypatch):
    """A gt4py cache of this test's own (every lowering starts cold)."""
    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(tmp_path / "gt_cache"))
    return tmp_path / "gt_cache"
