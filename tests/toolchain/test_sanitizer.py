"""``ORCHESTRA_SANITIZE=address``: sanitizer flags in the build's flags and key; a bad value is refused."""

from __future__ import annotations

import pytest

from orchestra import ConfigurationError
from orchestra.toolchain import host_args, sanitize_args


def test_address_sanitizer_flags_enter_cpu_builds_only(monkeypatch):
    monkeypatch.delenv("ORCHESTRA_SANITIZE", raising=False)
    plain = host_args("dace:cpu")
    assert "-fsanitize=address" not in plain
    monkeypatch.setenv("ORCHESTRA_SANITIZE", "address")
    assert host_args("dace:cpu") == plain + sanitize_args()
    assert "-fsanitize=address" in host_args("dace:cpu") and "-fsanitize=address" not in host_args("dace:gpu")


def test_another_sanitizer_is_refused_naming_the_choices(monkeypatch):
    monkeypatch.setenv("ORCHESTRA_SANITIZE", "thread")
    with pytest.raises(ConfigurationError, match="ORCHESTRA_SANITIZE='thread' is not a sanitizer .* address"):
        sanitize_args()
