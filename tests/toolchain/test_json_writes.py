"""DaCe's JSON files written inside :func:`c_encoded_json_writes` hold the same text as DaCe's own writes."""

from __future__ import annotations

import gzip

import dace
import numpy as np
from dace import serialize

from orchestra.toolchain.json_writes import c_encoded_json_writes, dump, recognizes


@dace.program
def _program(a: dace.float64[10, 12], b: dace.float64[10, 12], c: dace.float64):
    for i, j in dace.map[1:9, 0:12]:
        b[i, j] = a[i - 1, j] * c + a[i + 1, j] * np.float64(0.1)


def test_written_for_the_installed_dace():
    assert recognizes(serialize.dump)


def test_saved_files_hold_the_same_text(tmp_path):
    sdfg = _program.to_sdfg(simplify=True)
    texts = {}
    for label, compress, readable in [("plain", False, False), ("gz", True, False), ("readable", False, True)]:
        for stand_in in (False, True):
            path = tmp_path / f"{label}_{stand_in}.sdfg"
            if stand_in:
                with c_encoded_json_writes():
                    assert serialize.dump is dump
                    sdfg.save(str(path), compress=compress, readable=readable)
            else:
                sdfg.save(str(path), compress=compress, readable=readable)
            raw = gzip.decompress(path.read_bytes()) if compress else path.read_bytes()
            texts[label, stand_in] = raw.decode()
        assert texts[label, False] == texts[label, True]
    assert serialize.dump is not dump
    loaded = dace.SDFG.from_file(str(tmp_path / "gz_True.sdfg"))
    assert loaded.to_json() == dace.SDFG.from_file(str(tmp_path / "gz_False.sdfg")).to_json()
