"""Which waiting ranks lower which stencils ahead of a build, and how the wait runs that work.

The shares follow from the key table alone (no messages): the lowest waiting
ranks of the builder's key, round robin over the stencils grouped by gt4py's
content id. The wait runs one item at a time from its start delay on, checks
the builds between items and drops what is left once they ended. (The MPI
job lowering ahead for real is in ``test_mpi_build.py``.)
"""

from __future__ import annotations

import logging
import time
import warnings

import pytest

from orchestra.distributed.coordinator import BuildCoordinator, KeyTable
from orchestra.pipeline.lower_ahead import helper_share, lowering_work, stencil_groups


def shares(table: KeyTable, groups: int, limit=None) -> list[list[int]]:
    return [helper_share(table, rank, groups, limit) for rank in range(table.size)]


def test_the_lowest_waiting_ranks_share_the_groups_round_robin():
    table = KeyTable.shared("k", 6, builder=0)
    assert shares(table, 3) == [[], [0], [1], [2], [], []]
    assert shares(table, 7) == [[], [0, 5], [1, 6], [2], [3], [4]]
    assert shares(table, 7, limit=2) == [[], [0, 2, 4, 6], [1, 3, 5], [], [], []]
    assert shares(table, 7, limit=0) == [[]] * 6
    assert shares(table, 0) == [[]] * 6


def test_each_key_is_helped_by_its_own_waiting_ranks():
    # two classes: even ranks share key "a" (built by 0), odd ranks key "b" (built by 1)
    table = KeyTable(6, {"a": 0, "b": 1}, lambda rank: "a" if rank % 2 == 0 else "b")
    assert shares(table, 2) == [[], [], [0], [0], [1], [1]]
    assert shares(table, 1) == [[], [], [0], [0], [], []]


class _Stencil:
    def __init__(self, gt_id: str, name: str, calls: list) -> None:
        self.gt_id, self.name, self.calls = gt_id, name, calls

    def build_identity(self) -> dict:
        return {"gt_id": self.gt_id, "backend": "dace:cpu"}

    def lower_ahead(self) -> bool:
        self.calls.append(self.name)
        if self.name == "broken":
            raise ValueError("cannot lower")
        if self.name == "noisy":  # as DaCe warns about each connector while gt4py lowers
            for node in ("du_gen_0", "dv_gen_0", "du_gen_0"):
                warnings.warn(f"Tried to remove `None` from the in-connectors of node {node}", UserWarning)
        return True

    def restate_ahead(self) -> bool:
        self.calls.append(f"restate {self.name}")
        return self.name != "broken"


def test_stencils_are_grouped_by_content_id_and_a_failure_is_left_to_the_builder():
    calls: list[str] = []
    first, other_origin, second, broken = (
        _Stencil("1", "first", calls), _Stencil("1", "other_origin", calls),
        _Stencil("2", "second", calls), _Stencil("3", "broken", calls),
    )
    component = object()  # a callee that does not lower ahead (an orchestrated component)
    callees = (first, component, second, other_origin, broken)
    assert stencil_groups(callees) == [[first, other_origin], [second], [broken]]
    table = KeyTable.shared("k", 3, builder=0)
    for item in lowering_work(callees, table, 1, None):  # rank 1: groups 0 and 2
        item()  # the broken stencil's error does not escape
    # all of its share lowered first (what the builder waits for), then restated for the calls
    assert calls == ["first", "other_origin", "broken", "restate first", "restate other_origin", "restate broken"]
    assert lowering_work(callees, table, 0, None) == []  # the builder lowers while parsing


def test_what_lowering_ahead_warns_goes_to_the_debug_log_not_to_the_output(caplog):
    noisy = _Stencil("1", "noisy", [])
    (item, _restating) = lowering_work((noisy,), KeyTable.shared("k", 2, builder=0), 1, None)
    with warnings.catch_warnings(record=True) as escaped, caplog.at_level(logging.DEBUG, logger="orchestra"):
        warnings.simplefilter("always")
        item()
    assert escaped == []
    (record,) = [record for record in caplog.records if "warned" in record.getMessage()]
    message = record.getMessage()
    assert record.levelno == logging.DEBUG and "[rank 1]" in message
    assert "UserWarning: Tried to remove `None` from the in-connectors of node du_gen_0 (x2)" in message
    assert message.endswith("node dv_gen_0")


class _Request:
    """A non-blocking request that completes at its ``done_after``-th test."""

    def __init__(self, done_after: int) -> None:
        self.tests, self.done_after = 0, done_after

    def Test(self) -> bool:
        self.tests += 1
        return self.tests >= self.done_after


def test_the_wait_works_one_item_at_a_time_and_drops_the_rest_when_the_builds_end():
    done: list[int] = []
    request = _Request(done_after=3)
    BuildCoordinator(None)._poll(request, "building", meanwhile=[lambda i=i: done.append(i) for i in range(5)])
    assert done == [0, 1] and request.tests == 3


def test_the_wait_starts_the_work_only_after_its_delay():
    started: list[float] = []
    begin = time.monotonic()
    request = _Request(done_after=12)  # ~12 back-off sleeps of 1 ms doubling: well past 0.3 s
    BuildCoordinator(None)._poll(request, "building", meanwhile=[lambda: started.append(time.monotonic() - begin)],
                                 meanwhile_after_s=0.3)
    assert started and started[0] >= 0.3
    quick = _Request(done_after=2)
    unused: list[int] = []
    BuildCoordinator(None)._poll(quick, "building", meanwhile=[lambda: unused.append(1)], meanwhile_after_s=5.0)
    assert unused == []  # a build found in the cache ends the wait before any work starts


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_bad_helper_count_is_one_clear_error(monkeypatch, value):
    from orchestra import DaceConfig
    from orchestra.errors import ConfigurationError

    monkeypatch.setenv("ORCHESTRA_LOWERING_HELPERS", value)
    with pytest.raises(ConfigurationError, match="ORCHESTRA_LOWERING_HELPERS"):
        DaceConfig(None, backend="dace:cpu", orchestration="Python")
