"""ORCHESTRA_DEBUG syntax, DebugChecks identity and its cache-key contribution (no builds)."""

import json

import pytest

from orchestra import DaceConfig
from orchestra.errors import ConfigurationError
from orchestra.passes.debug.selection import (
    DebugChecks,
    NanCheck,
    NegativeCheck,
    ProgressCheck,
    TraceCheck,
)
from orchestra.pipeline.stages import OptimizeOptions


def test_plain_names():
    checks = DebugChecks.parse("nan, progress,nan")
    assert checks.checks == ("nan", "progress")
    assert checks == DebugChecks(nan=NanCheck(), progress=ProgressCheck())
    assert not DebugChecks.parse("") and not DebugChecks.parse(" ; ")


def test_options_and_lists():
    checks = DebugChecks.parse("nan:include=h*,q*,exclude=tmp*;negative:fields=h,threshold=-1e-3;trace:point=3,4,0;progress")
    assert checks.nan == NanCheck(include=("h*", "q*"), exclude=("tmp*",))
    assert checks.negative == NegativeCheck(fields=("h",), threshold=-1e-3)
    assert checks.trace == TraceCheck(point=(3, 4, 0))
    assert checks.progress == ProgressCheck()
    # options bind to the last name before ':'
    assert DebugChecks.parse("progress,trace:point=1,2,3").trace.point == (1, 2, 3)


def test_spec_and_key_round_trip():
    text = "trace:point=1,2,3,include=h;negative:fields=h,q*,exclude=qv,threshold=0.5;nan:exclude=tmp*;progress"
    checks = DebugChecks.parse(text)
    assert DebugChecks.parse(checks.spec()) == checks
    key = checks.as_key()
    assert json.loads(json.dumps(key)) == key
    assert DebugChecks.from_key(key) == checks
    assert key["negative"] == {"fields": ["h", "q*"], "exclude": ["qv"], "threshold": 0.5}


def test_every_option_changes_the_key():
    base = DebugChecks.parse("nan;negative:fields=h;trace:point=1,1,1")
    variants = [
        "nan:include=h;negative:fields=h;trace:point=1,1,1",
        "nan:exclude=h;negative:fields=h;trace:point=1,1,1",
        "nan;negative:fields=q;trace:point=1,1,1",
        "nan;negative:fields=h,threshold=1;trace:point=1,1,1",
        "nan;negative:fields=h,exclude=x;trace:point=1,1,1",
        "nan;negative:fields=h;trace:point=1,1,2",
        "nan;negative:fields=h;trace:point=1,1,1,include=h",
        "nan;negative:fields=h;trace:point=1,1,1;progress",
    ]
    keys = {json.dumps(OptimizeOptions(debug_checks=DebugChecks.parse(v)).as_key(), sort_keys=True) for v in variants}
    keys.add(json.dumps(OptimizeOptions(debug_checks=base).as_key(), sort_keys=True))
    assert len(keys) == len(variants) + 1
    # spelling does not matter
    same = DebugChecks.parse(" trace:point=1,1,1 ; negative:threshold=0,fields=h ; nan:include=*")
    assert same.as_key() == base.as_key()


def test_checks_are_frozen_and_hashable():
    checks = DebugChecks.parse("nan;progress")
    with pytest.raises(Exception):
        checks.nan = None  # type: ignore[misc]
    assert hash(checks) == hash(DebugChecks.parse("progress,nan"))


@pytest.mark.parametrize(
    "text,message",
    [
        ("nan,nann", r"unknown debug check\(s\) nann in ORCHESTRA_DEBUG; valid checks are: nan, negative, trace, progress"),
        ("nan:incl=h", r"unknown option 'incl' of debug check nan .*valid options are: include, exclude"),
        ("progress:every=2", r"unknown option 'every' of debug check progress .*it takes no options"),
        ("negative", r"negative check needs fields=PATTERNS"),
        ("negative:fields=h,threshold=low", r"negative:threshold must be a finite number"),
        ("negative:fields=h,threshold=0,1", r"expected OPTION=VALUE, got '1'"),
        ("trace:point=1,2", r"trace:point must be three non-negative integers"),
        ("trace:point=a,b,c", r"trace:point must be three non-negative integers"),
        ("nan:h*", r"expected OPTION=VALUE, got 'h\*'"),
        ("nan:include=", r"nan:include needs one or more field-name patterns"),
        (":include=h", r"options 'include=h' follow no check name"),
        ("nan:include=h;nan:exclude=q", r"options for nan are given twice"),
        ("nan:include=h,include=q", r"option nan:include is given twice"),
    ],
)
def test_mistakes_are_clear_errors(text, message):
    with pytest.raises(ConfigurationError, match=message):
        DebugChecks.parse(text)


def test_environment_and_config(monkeypatch):
    monkeypatch.setenv("ORCHESTRA_DEBUG", "nan:exclude=tmp*;progress")
    config = DaceConfig(None, backend="dace:cpu", orchestration="Python")
    assert config.debug_checks == DebugChecks(nan=NanCheck(exclude=("tmp*",)), progress=ProgressCheck())
    monkeypatch.setenv("ORCHESTRA_DEBUG", "nan,bogus")
    with pytest.raises(ConfigurationError, match="bogus"):
        DaceConfig(None, backend="dace:cpu", orchestration="Python")


def test_config_accepts_the_text_form():
    config = DaceConfig(None, backend="dace:cpu", orchestration="Python", debug_checks="nan;progress")
    assert config.debug_checks == DebugChecks.parse("progress,nan")
    with pytest.raises(ConfigurationError, match="unknown debug check"):
        DaceConfig(None, backend="dace:cpu", orchestration="Python", debug_checks="nan,nope")


@pytest.mark.parametrize(
    "module",
    ["orchestra.passes.debug.selection", "orchestra.passes.debug.kernels", "orchestra.passes.debug.codegen"],
)
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0
