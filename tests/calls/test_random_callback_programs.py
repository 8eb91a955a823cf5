"""A sample of random callback programs, bitwise in BuildAndRun and Run (hundreds: ``scripts/fuzz_programs.py --callbacks``).

Seeds 0, 5, 7 and 9 each found a defect of issue 54 when the generator was
written: a chained callback mapping read an overwritten entry (0), nested
by-name mappings merged into the program by inlining (5), a component called
twice had its array made one with its caller's of the same name (7), and a
nested callback DaCe's closure named otherwise was not passed (9, a failed
parse), and DaCe gave two calls of one component one symbol (24, refused
until such calls were split); seed 293 (of the 300 run outside CI) bound a
call without arguments to a caller's symbol of another C type (a compile
error, until such a mapping got a symbol of its own). Seed 3 is a program
whose components each call one callback.
"""

from __future__ import annotations

import pytest

from tests.calls.random_callback_programs import check


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("callback_programs")


@pytest.mark.parametrize("seed", [0, 3, 5, 7, 9, 24, 293])
def test_random_callback_program_is_bitwise(seed, work):
    outcome = check(seed, work, run_mode=True)
    assert outcome == {"BuildAndRun": [], "Run": []}, outcome
