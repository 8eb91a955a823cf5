"""The stand-in for DaCe's ``deduplicate`` returns what DaCe's returns, in linear time.

Compared with DaCe's own function on lists and tuples of repeated items
(equal but distinct objects among them, unhashable items refused alike),
installed and put back by :func:`linear_deduplication`, and the code of a
program generated inside it equals the code generated with DaCe's.
"""

from __future__ import annotations

import random
import time

import dace
import pytest
from dace import dtypes
from dace.codegen import codegen
from dace.sdfg import graph

from orchestra.toolchain.deduplication import deduplicate, linear_deduplication, recognizes


class _Equal:
    """Equal to every other instance with the same key (a class of equal, distinct objects)."""

    def __init__(self, key: int, tag: str) -> None:
        self.key, self.tag = key, tag

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Equal) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


def test_written_for_the_installed_dace():
    assert recognizes(dtypes.deduplicate)


@pytest.mark.parametrize("seed", range(20))
def test_same_items_in_the_same_order_as_dace(seed):
    rng = random.Random(seed)
    items = [_Equal(rng.randrange(8), f"t{i}") for i in range(rng.randrange(0, 40))]
    ours, theirs = deduplicate(items), dtypes.deduplicate(items)
    assert type(ours) is list
    assert [(x.key, x.tag) for x in ours] == [(x.key, x.tag) for x in theirs]  # the first of equal items kept
    numbers = tuple(rng.randrange(5) for _ in range(30)) + (1.0, True)  # 1 == 1.0 == True
    assert deduplicate(numbers) == dtypes.deduplicate(numbers) and type(deduplicate(numbers)) is tuple
    nan = float("nan")
    assert deduplicate([nan, 1, nan, float("nan")])[:2] == dtypes.deduplicate([nan, 1, nan, float("nan")])[:2]


def test_unhashable_items_refused_alike():
    with pytest.raises(TypeError):
        dtypes.deduplicate([[1], [1]])
    with pytest.raises(TypeError):
        deduplicate([[1], [1]])


def test_installed_inside_the_block_only():
    before = (dtypes.deduplicate, graph.deduplicate)
    with linear_deduplication():
        assert dtypes.deduplicate is not before[0] and graph.deduplicate is not before[1]
        assert dtypes.deduplicate([3, 1, 3, 2, 1]) == [3, 1, 2]
        with linear_deduplication():  # nested: the same, and still there after the inner block
            assert dtypes.deduplicate is deduplicate
        assert dtypes.deduplicate is deduplicate and graph.deduplicate is deduplicate
    assert (dtypes.deduplicate, graph.deduplicate) == before


def test_linear_where_dace_is_quadratic():
    items = list(range(20000)) * 2
    start = time.perf_counter()
    assert deduplicate(items) == list(range(20000))
    assert time.perf_counter() - start < 1.0  # DaCe's compares 20,000 items with up to 40,000 each


@dace.program
def _program(a: dace.float64[20, 20], b: dace.float64[20, 20]):
    for i, j in dace.map[1:19, 1:19]:
        b[i, j] = a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]
    for i, j in dace.map[1:19, 1:19]:
        a[i, j] = 0.25 * b[i, j]


def test_same_generated_code():
    codes = []
    for stand_in in (False, True):
        sdfg = _program.to_sdfg(simplify=True)
        if stand_in:
            with linear_deduplication():
                objects = codegen.generate_code(sdfg, validate=False)
        else:
            objects = codegen.generate_code(sdfg, validate=False)
        codes.append([obj.clean_code for obj in objects])
    assert codes[0] == codes[1]
