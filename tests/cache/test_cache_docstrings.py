"""The examples in the docstrings of the cache modules and of the key's parse audit run."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "orchestra.cache.fingerprint",
        "orchestra.cache.manifest",
        "orchestra.cache.versions",
        "orchestra.cache.layout",
        "orchestra.pipeline.audit",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0
