"""The built program saved as DaCe saves it, faster (orchestra.pipeline.stages._save_sdfg)."""

from __future__ import annotations

import gzip

import dace
import numpy as np

from orchestra.pipeline.stages import _save_sdfg


@dace.program
def _axpy(x: dace.float64[20], y: dace.float64[20], a: dace.float64):
    for i in dace.map[0:20]:
        y[i] = a * x[i] + y[i]


def test_the_saved_program_is_the_text_dace_saves_and_loads_back(tmp_path):
    sdfg = _axpy.to_sdfg()
    sdfg.save(str(tmp_path / "dace.sdfgz"), hash=False, compress=True)
    _save_sdfg(sdfg, tmp_path / "orchestra.sdfgz")
    ours = gzip.decompress((tmp_path / "orchestra.sdfgz").read_bytes())
    assert ours == gzip.decompress((tmp_path / "dace.sdfgz").read_bytes())
    loaded = dace.SDFG.from_file(str(tmp_path / "orchestra.sdfgz"))
    x, y = np.arange(20.0), np.ones(20)
    loaded(x=x, y=y, a=2.0)
    assert np.array_equal(y, 2.0 * np.arange(20.0) + 1.0)
