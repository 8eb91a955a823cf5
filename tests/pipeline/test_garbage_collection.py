"""Fewer collections during a build: thresholds and frozen objects inside the block, as before after it."""

from __future__ import annotations

import gc
import threading

from orchestra.pipeline.garbage_collection import YOUNGEST_THRESHOLD, fewer_collections


def test_inside_the_block_and_back_after():
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with fewer_collections():
        assert gc.get_threshold()[0] == max(before[0], YOUNGEST_THRESHOLD)
        assert gc.get_threshold()[1:] == before[1:]
        assert gc.get_freeze_count() > 0  # what lived before the build is out of the collector's walks
        cycle = [];  cycle.append(cycle)  # noqa: E702 - garbage made inside is still collected
        del cycle
        assert gc.collect() >= 1
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_overlapping_blocks_restore_after_the_last():
    before = gc.get_threshold()
    inside, leave = threading.Event(), threading.Event()

    def other_build():
        with fewer_collections():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other_build)
    with fewer_collections():
        thread.start()
        assert inside.wait(10)
    assert gc.get_threshold()[0] == max(before[0], YOUNGEST_THRESHOLD)  # the other build still runs
    leave.set()
    thread.join(10)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_itself_keeps_them():
    gc.freeze()
    frozen = gc.get_freeze_count()
    try:
        with fewer_collections():
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen  # not unfrozen by the build
    finally:
        gc.unfreeze()
