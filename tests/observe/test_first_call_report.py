"""The first-call summary line (orchestra.observe.first_call_report): what it says, and who collects."""

from __future__ import annotations

import datetime
import subprocess
import sys
import time

from orchestra.observe import first_call_report
from orchestra.observe.first_call_report import FirstCall, Obtained, collecting, record, summary

TIMES = {"parse": 1.0, "optimize": 2.0, "compile": 3.0}
STARTED = datetime.datetime(2026, 11, 26, 7, 0, 0, 600000, tzinfo=datetime.timezone.utc)


def _at(seconds_after_start: int) -> str:
    """A manifest's ``created`` (to the second) this many seconds after the call started."""
    moment = STARTED.replace(microsecond=0) + datetime.timedelta(seconds=seconds_after_start)
    return moment.isoformat(timespec="seconds")


def test_the_line_counts_programs_names_those_built_and_sums_their_stages():
    first_call = FirstCall(started=STARTED.timestamp())
    first_call.obtained = [Obtained(f"C{i}.__call__", i % 2 == 0, _at(-3600), TIMES, 0.25) for i in range(12)]
    assert summary("Model.__call__", 7.04, first_call) == (
        "Model.__call__: first call 7.0 s: built 6 of 12 programs (C0.__call__, C2.__call__, C4.__call__, "
        "C6.__call__, ...), found 6 in the cache: parse 6.0 s, optimize 12.0 s, compile 18.0 s; loaded in 3.00 s"
    )
    # a build whose manifest kept no stage times (written before they were kept) is counted, not timed
    first_call.obtained = [Obtained("M", True, _at(0), {}, 0.5)]
    assert summary("M", 1.0, first_call) == (
        "M: first call 1.0 s: built 1 of 1 program (M), found 0 in the cache; loaded in 0.50 s"
    )


def test_a_program_obtained_alone_counts_as_built_when_published_during_the_call():
    """Another rank won the key's lock and built it (the manifest is newer than the call): built, not found."""
    first_call = FirstCall(started=STARTED.timestamp())
    during = Obtained("Won.__call__", False, _at(1), TIMES, 0.1)  # published in the next second
    later = Obtained("Later.__call__", False, _at(5), TIMES, 0.1)
    # published in the second the call started in, a moment before it (the time has no fraction): found
    same_second = Obtained("Just.__call__", False, _at(0), TIMES, 0.1)
    before = Obtained("Old.__call__", False, _at(-1), TIMES, 0.1)
    odd = Obtained("Odd.__call__", False, "yesterday", TIMES, 0.1)
    assert [first_call.built(item) for item in (during, later, same_second, before, odd)] == [
        True, True, False, False, False
    ]


def test_only_the_outermost_call_collects_and_nothing_is_kept_outside_one():
    record(Obtained("Outside", True, _at(0), TIMES, 0.0))  # no call collects: dropped
    with collecting() as outer:
        with collecting() as inner:
            assert inner is None  # a nested orchestrated call reports into the outer one
            record(Obtained("Inner", False, _at(0), {}, 0.1))
        record(Obtained("Outer", True, _at(0), TIMES, 0.2))
    assert [item.label for item in outer.obtained] == ["Inner", "Outer"]
    assert first_call_report._COLLECTING.get() is None


def test_a_late_rank_counts_a_build_published_after_its_process_started_before_its_call(monkeypatch):
    """Under load a rank reaches the call after a faster rank of the job published the build: still built."""
    monkeypatch.setattr(first_call_report, "_counting_from", [first_call_report.PROCESS_STARTED])  # no call yet
    first_call = FirstCall()
    assert first_call.started == first_call_report.PROCESS_STARTED <= first_call_report._IMPORTED
    since_start = datetime.datetime.fromtimestamp(first_call.started + 2, datetime.timezone.utc)
    published = Obtained("Late.__call__", False, since_start.isoformat(timespec="seconds"), TIMES, 0.1)
    assert first_call.built(published)


def test_what_an_earlier_first_call_of_this_process_built_counts_as_found_in_the_next(monkeypatch):
    monkeypatch.setattr(first_call_report, "_counting_from", [first_call_report.PROCESS_STARTED])
    with collecting():
        pass  # an earlier first call, which built (say) Earlier.__call__ before it ended
    ended = first_call_report._counting_from[0]
    assert ended > first_call_report.PROCESS_STARTED
    before_end = datetime.datetime.fromtimestamp(ended - 1, datetime.timezone.utc).isoformat(timespec="seconds")
    with collecting() as later:
        assert later.started == ended
        assert not later.built(Obtained("Earlier.__call__", False, before_end, TIMES, 0.1))


def test_the_process_start_is_this_process_s():
    """Read from Linux's record: between the moment before the process was made and its import of orchestra."""
    before = time.time()
    done = subprocess.run(
        [sys.executable, "-c", "from orchestra.observe import first_call_report as f; print(f.PROCESS_STARTED, f._IMPORTED)"],
        capture_output=True, text=True, check=True,
    )
    started, imported = (float(value) for value in done.stdout.split())
    assert before - 1.0 <= started <= imported  # the clock ticks of /proc are coarse (1/100 s)
