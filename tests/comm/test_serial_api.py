"""Serial checks of the public API: imports stay light, doctests run, argument errors."""

from __future__ import annotations

import doctest
import subprocess
import sys

import pytest

from orchestra.comm import CallbackHaloExchanger, cube, index_map, partitioner
from tests.mpi_launcher import REPO_ROOT


def test_import_does_not_start_mpi_or_load_dace():
    code = "import sys, orchestra.comm; print('mpi4py.MPI' in sys.modules, 'dace' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("module", [index_map, cube, partitioner], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


def test_callback_exchanger_checks_its_arguments():
    class State:
        q = None

    with pytest.raises(TypeError, match="needs updater"):
        CallbackHaloExchanger(State(), ["q"])
    with pytest.raises(AttributeError, match="no field 'h'"):
        CallbackHaloExchanger(State(), ["h"], updater=object())
    with pytest.raises(TypeError, match="sequence of names"):
        CallbackHaloExchanger(State(), "q", updater=object())
    exchanger = CallbackHaloExchanger(State(), ["q"], updater=object())
    for method in (exchanger.start, exchanger.wait, exchanger.update):
        assert getattr(method, "__orchestra_callback__", False)
