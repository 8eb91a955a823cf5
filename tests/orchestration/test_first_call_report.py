"""The first-call summary line (orchestra.first_call_report): what it says, and who collects."""

from __future__ import annotations

from orchestra import first_call_report
from orchestra.first_call_report import Obtained, collecting, record, summary

TIMES = {"parse": 1.0, "optimize": 2.0, "compile": 3.0}


def test_the_line_counts_programs_names_those_built_and_sums_their_stages():
    obtained = [Obtained(f"C{i}.__call__", i % 2 == 0, TIMES, 0.25) for i in range(12)]
    assert summary("Model.__call__", 7.04, obtained) == (
        "Model.__call__: first call 7.0 s: built 6 of 12 programs (C0.__call__, C2.__call__, C4.__call__, "
        "C6.__call__, ...), found 6 in the cache: parse 6.0 s, optimize 12.0 s, compile 18.0 s; loaded in 3.00 s"
    )
    # a build whose manifest kept no stage times (written before they were kept) is counted, not timed
    assert summary("M", 1.0, [Obtained("M", True, {}, 0.5)]) == (
        "M: first call 1.0 s: built 1 of 1 program (M), found 0 in the cache; loaded in 0.50 s"
    )


def test_only_the_outermost_call_collects_and_nothing_is_kept_outside_one():
    record(Obtained("Outside", True, TIMES, 0.0))  # no call collects: dropped
    with collecting() as outer:
        with collecting() as inner:
            assert inner is None  # a nested orchestrated call reports into the outer one
            record(Obtained("Inner", False, {}, 0.1))
        record(Obtained("Outer", True, TIMES, 0.2))
    assert [item.label for item in outer] == ["Inner", "Outer"]
    assert first_call_report._COLLECTING.get() is None
