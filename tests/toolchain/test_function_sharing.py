"""Hashing only nested SDFGs that may equal another: the same functions shared, the same code generated.

A program with a nested program called inside maps at four sites (three of
them equal, so DaCe shares one C++ function among them) and one of another
shape: code generated with DaCe's hashing and inside
:func:`hashing_only_where_shared` is the same text, and both paths ran (some
nested SDFGs hashed, some given a token).
"""

from __future__ import annotations

import copy

import dace
import pytest
from dace.codegen import codegen
from dace.sdfg import SDFG

from orchestra.toolchain import function_sharing
from orchestra.toolchain.function_sharing import hashing_only_where_shared, recognizes, signature, unshared

N = dace.symbol("N")


@dace.program
def _point(x: dace.float64[2], y: dace.float64[2]):
    if x[0] > 0.0:  # a branch: the nested SDFG stays one (simplify inlines single states only)
        y[1] = x[0] * 2.0 + x[1]
    else:
        y[1] = x[1]


@dace.program
def _other(x: dace.float64[2], y: dace.float64[2]):
    if x[1] > 1.0:
        y[0] = x[1] - 1.0


@dace.program
def _sites(a: dace.float64[N], b: dace.float64[N], c: dace.float64[N]):
    for i in dace.map[0:N - 1]:
        _point(a[i:i + 2], b[i:i + 2])
    for i in dace.map[0:N - 1]:
        _point(b[i:i + 2], c[i:i + 2])
    for i in dace.map[0:N - 1]:
        _point(c[i:i + 2], a[i:i + 2])
    for i in dace.map[0:N - 1]:
        _other(a[i:i + 2], c[i:i + 2])


@pytest.fixture(scope="module")
def program() -> SDFG:
    sdfg = _sites.to_sdfg(simplify=True)
    sdfg.fill_scope_connectors()
    return sdfg


def _nested(sdfg: SDFG) -> list:
    return [node.sdfg for node, _ in sdfg.all_nodes_recursive() if isinstance(node, dace.nodes.NestedSDFG)]


def _code(sdfg: SDFG) -> list[str]:
    return [obj.clean_code for obj in codegen.generate_code(copy.deepcopy(sdfg), validate=False)]


def test_written_for_the_installed_dace():
    assert recognizes(SDFG.hash_sdfg)
    assert not recognizes(lambda self, jsondict=None: "")


def test_equal_hashes_have_equal_signatures(program):
    nested = _nested(program)
    by_hash: dict[str, set] = {}
    for sdfg in nested:
        by_hash.setdefault(sdfg.hash_sdfg(), set()).add(signature(sdfg))
    assert len(nested) == 4 and len(by_hash) == 2  # three equal, one of its own
    assert all(len(signatures) == 1 for signatures in by_hash.values())
    assert len(unshared(program)) == 1


def test_the_same_code_with_fewer_hashes(program, monkeypatch):
    expected = _code(program)
    serialized = []  # DaCe's hash serializes the nested SDFG it hashes
    to_json = SDFG.to_json

    def counted(self, *args, **kwargs):
        if self.parent_sdfg is not None:
            serialized.append(self.name)
        return to_json(self, *args, **kwargs)

    original = SDFG.hash_sdfg
    with hashing_only_where_shared():
        assert getattr(SDFG.hash_sdfg, "__orchestra_stand_in__", False)
        monkeypatch.setattr(SDFG, "to_json", counted)
        code = _code(program)
        monkeypatch.undo()
    assert SDFG.hash_sdfg is original  # restored
    assert code == expected
    assert len(serialized) == 3  # the three equal nested SDFGs hashed, the fourth given its token


def test_other_processes_and_given_json_get_dace_s_hash(program, monkeypatch):
    inner = next(sdfg for sdfg in _nested(program) if id(sdfg) in unshared(program))
    real = inner.hash_sdfg()
    with hashing_only_where_shared():
        assert inner.hash_sdfg() != real  # a token of its own
        assert inner.hash_sdfg(inner.to_json()) == real  # a JSON dictionary given: DaCe's hash
        monkeypatch.setattr(function_sharing.os, "getpid", lambda: -1)
        assert inner.hash_sdfg() == real  # another process (a forked child): DaCe's hash


def _holder(*extra: str) -> SDFG:
    sdfg = SDFG("holder")
    sdfg.add_array("x", [4], dace.float64)
    for name in extra:
        sdfg.add_array(name, [8], dace.float64)
    sdfg.add_state("only")
    return sdfg


def test_what_dace_s_hash_drops_the_signature_leaves_out():
    # DaCe's hash deletes every JSON key spelled like one of its dropped keys, a container named so included
    assert _holder("guid").hash_sdfg() == _holder().hash_sdfg()
    assert signature(_holder("guid")) == signature(_holder())
    assert _holder("y").hash_sdfg() != _holder().hash_sdfg()
    assert signature(_holder("y")) != signature(_holder())  # other names count
