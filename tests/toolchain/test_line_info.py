"""orchestra's stand-in for DaCe's search of a new node's source line gives DaCe's answer, only cheaper.

DaCe records, on every node added without an explicit ``debuginfo``, the
file and line of the code that added it, found with ``inspect.stack()``
(``orchestra.toolchain.line_info``). Inside :func:`cheap_line_info` the same line must
be recorded, from the same frame, an explicit line kept, ``"none"`` honoured,
and DaCe's own function back in place after the block.
"""

from __future__ import annotations

import dace
import pytest
from dace.sdfg import state as dace_state

from orchestra.toolchain.line_info import cheap_line_info, replaceable
from orchestra.toolchain import dace_settings


def _add_nodes(explicit=None) -> tuple:
    """An access node and a tasklet added here (this function is the frame DaCe records)."""
    sdfg = dace.SDFG("line_info_probe")
    sdfg.add_array("a", [4], dace.float64)
    state = sdfg.add_state()
    access = state.add_access("a", debuginfo=explicit)
    tasklet = state.add_tasklet("t", {}, {"out"}, "out = 1.0", debuginfo=explicit)
    return access.debuginfo, tasklet.debuginfo


def _as_tuple(info) -> tuple:
    return None if info is None else (info.start_line, info.start_column, info.end_line, info.end_column, info.filename)


def test_dace_function_is_the_one_replaced():
    assert replaceable(dace_state._get_debug_info), (
        "DaCe's _get_debug_info changed: check orchestra.toolchain.line_info against the new DaCe before replacing it"
    )
    assert not replaceable(lambda explicit: explicit)


def test_the_same_line_is_recorded_from_the_same_frame_and_dace_is_restored():
    original = dace_state._get_debug_info
    with dace.config.set_temporary("compiler", "lineinfo", value="inspect"):
        expected = [_as_tuple(info) for info in _add_nodes()]
        with cheap_line_info():
            assert dace_state._get_debug_info is not original
            got = [_as_tuple(info) for info in _add_nodes()]
            with cheap_line_info():  # nested: nothing more to install, nothing undone on exit
                assert [_as_tuple(info) for info in _add_nodes()] == got
            assert dace_state._get_debug_info is not original
    assert dace_state._get_debug_info is original
    assert got == expected
    assert all(line[4] == __file__ for line in got)  # this test's own frame, as DaCe records it


@pytest.mark.parametrize("mode", ["inspect", "none"])
def test_an_explicit_line_is_kept_and_none_records_nothing(mode):
    explicit = dace.dtypes.DebugInfo(7, 1, 7, 9, "model.py")
    with dace.config.set_temporary("compiler", "lineinfo", value=mode):
        expected = [_as_tuple(info) for info in _add_nodes(explicit)] + [_as_tuple(info) for info in _add_nodes()]
        with cheap_line_info():
            got = [_as_tuple(info) for info in _add_nodes(explicit)] + [_as_tuple(info) for info in _add_nodes()]
    assert got == expected
    if mode == "none":
        assert got == [None] * 4


def test_builds_run_with_it_and_leave_dace_as_it_was():
    original = dace_state._get_debug_info
    with dace_settings():
        assert dace_state._get_debug_info is not original
    assert dace_state._get_debug_info is original
