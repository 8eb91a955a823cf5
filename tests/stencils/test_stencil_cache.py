"""A stencil lowered ahead (by any process) is what a build's parse reads, and nothing is recomputed.

:meth:`FrozenStencil.lower_ahead` puts the stencil's frozen SDFG and its
argument data into gt4py's cache; :meth:`FrozenStencil.__sdfg__` then reads
both without gt4py's IR and without lowering, and returns the SDFG a cold
parse returns. The argument-data file is checked before use: damaged,
stale (other parameters) or of another format, it is recomputed.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

import dace
import numpy as np
import pytest
from gt4py.cartesian import config as gt_config
from gt4py.cartesian.backend import dace_backend, module_generator
from gt4py.cartesian.gtscript import PARALLEL, I, Field, computation, horizontal, interval, region

from orchestra import FrozenStencil
from orchestra.observe.program_text import program_text
from orchestra.stencils.stencil_cache import arguments_path, argument_data, lowering_stamp_path, stencil_lock

FloatField = Field[np.float64]
PARAMETERS = ["a", "b", "far", "c", "unused"]


def smooth(a: FloatField, b: FloatField, far: FloatField, c: float, unused: float):
    with computation(PARALLEL), interval(...):
        b = 0.25 * (a[-1, 0, 0] + 2.0 * a + a[1, 0, 0]) + c
        with horizontal(region[I[0] - 2, :]):  # outside the domain: far is never read
            b = far


def stencil() -> FrozenStencil:
    """A new object each time: a new gt4py builder that has computed nothing yet."""
    return FrozenStencil(smooth, backend="dace:cpu", origin={"_all_": (1, 1, 0), "far": (0, 0, 0)}, domain=(5, 4, 3))


def descriptors() -> tuple:
    field = dace.data.Array(dace.float64, (7, 6, 3))
    return field, dace.data.Array(dace.float64, (7, 6, 3)), dace.data.Array(dace.float64, (7, 6, 3)), 0.5, 3.0


def nothing_recomputed(monkeypatch) -> None:
    """From here on, computing gt4py's IR or lowering a stencil fails the test."""

    def forbidden(*args, **kwargs):
        raise AssertionError("gt4py's IR or lowering was computed again")

    monkeypatch.setattr(module_generator, "make_args_data_from_gtir", forbidden)
    monkeypatch.setattr(dace_backend.SDFGManager, "sdfg_via_schedule_tree", forbidden)
    monkeypatch.setattr(dace_backend, "freeze_origin_domain_sdfg", forbidden)  # another origin than lowered


def test_argument_data_is_saved_and_read_back_equal_without_the_ir(gt_cache, monkeypatch):
    first = stencil()
    builder = first.stencil_object.builder
    with stencil_lock(builder):
        data = argument_data(builder, PARAMETERS)
    assert data == module_generator.make_args_data_from_gtir(builder.gtir_pipeline)
    assert arguments_path(builder).is_file()
    assert data.field_info["far"].access == 0 and data.parameter_info["unused"].access == 0  # gt4py: unused

    nothing_recomputed(monkeypatch)
    again = stencil().stencil_object.builder
    with stencil_lock(again):
        assert argument_data(again, PARAMETERS) == data


def vertical(a: FloatField, b: FloatField, c: FloatField, d: FloatField):
    with computation(PARALLEL), interval(1, -1):
        b = a[0, 0, -1] + a[0, 0, 1]
        c = 0.5 * b + d[0, 0, 1]
    with computation(PARALLEL), interval(0, 1):
        c = a


def test_argument_data_visits_the_vertical_boundaries_once_and_equals_gt4pys(gt_cache, monkeypatch):
    """orchestra lets gt4py compute the boundaries once per IR, not once per field; the data must not change."""
    visits = []
    compute = module_generator.compute_k_boundary

    def counted(node):
        visits.append(node)
        return compute(node)

    monkeypatch.setattr(module_generator, "compute_k_boundary", counted)
    builder = FrozenStencil(vertical, backend="dace:cpu", origin=(0, 0, 0), domain=(4, 4, 5)).stencil_object.builder
    with stencil_lock(builder):
        data = argument_data(builder, ["a", "b", "c", "d"])
    assert len(visits) == 1
    assert module_generator.compute_k_boundary is counted  # gt4py's module as it was
    monkeypatch.delitem(module_generator._args_data_cache, builder.gtir_pipeline.stencil_id)
    assert module_generator.make_args_data_from_gtir(builder.gtir_pipeline) == data  # gt4py alone: one visit per field
    assert len(visits) == 1 + 4
    assert {name: info.boundary[2] for name, info in data.field_info.items()} == {
        "a": (0, 0), "b": (-1, -1), "c": (0, -1), "d": (-2, 0)  # gt4py's vertical boundaries of each field
    }


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated: not JSON
        lambda text: text.replace('"unused"', '"renamed"'),  # stale: other parameters
        lambda text: text.replace('"format": 1', '"format": 99'),  # another format
        lambda text: json.dumps({"format": 1, "parameters": PARAMETERS}),  # parts missing
    ],
    ids=["truncated", "other-parameters", "other-format", "incomplete"],
)
def test_a_damaged_or_stale_argument_file_is_recomputed_and_replaced(gt_cache, damage):
    builder = stencil().stencil_object.builder
    with stencil_lock(builder):
        data = argument_data(builder, PARAMETERS)
    path = arguments_path(builder)
    good = path.read_text()
    path.write_text(damage(good))
    fresh = stencil().stencil_object.builder
    with stencil_lock(fresh):
        assert argument_data(fresh, PARAMETERS) == data
    assert json.loads(path.read_text()) == json.loads(good)


def test_parameters_that_differ_from_the_definition_are_refused(gt_cache):
    builder = stencil().stencil_object.builder
    with stencil_lock(builder), pytest.raises(RuntimeError, match="lowered the parameters"):
        argument_data(builder, ["a", "b"])


def test_a_stencil_lowered_ahead_is_parsed_from_the_cache_as_a_cold_parse_returns_it(gt_cache, tmp_path, monkeypatch):
    cold = program_text(stencil().__sdfg__(*descriptors()))

    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(tmp_path / "second_cache"))
    assert stencil().lower_ahead() is True
    assert stencil().lower_ahead() is False  # there already: found without the IR
    nothing_recomputed(monkeypatch)
    assert stencil().lower_ahead() is False
    assert program_text(stencil().__sdfg__(*descriptors())) == cold


def test_a_stencil_of_another_backend_does_not_lower_ahead(gt_cache):
    numpy_stencil = FrozenStencil(smooth, backend="numpy", origin=(1, 1, 0), domain=(5, 4, 3))
    assert numpy_stencil.lower_ahead() is False


def _cached_sdfgs(gt_cache) -> tuple[list, list]:
    """gt4py's frozen SDFG files (module stem, then a hash of origin and domain) and the stencil's own
    (not orchestra's restated SDFGs beside them)."""
    files = sorted(path for path in gt_cache.rglob("*.sdfgz") if not path.parent.name.endswith(".restated"))
    frozen = [path for path in files if re.search(r"_[0-9a-f]{64}\.sdfgz$", path.name)]
    return frozen, [path for path in files if path not in frozen]


def _damage(paths, monkeypatch) -> None:
    for path in paths:
        path.write_bytes(path.read_bytes()[:100])  # as a writer killed halfway leaves it
    monkeypatch.setattr(dace_backend.SDFGManager, "_loaded_sdfgs", {})  # a new process: only the files


def _damage_warnings(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if "does not load" in record.getMessage()]


@pytest.mark.parametrize("which", ["frozen", "both"])
def test_a_damaged_sdfg_in_gt4pys_cache_is_a_miss_lowered_again(gt_cache, which, monkeypatch, caplog):
    cold = program_text(stencil().__sdfg__(*descriptors()))
    frozen, unfrozen = _cached_sdfgs(gt_cache)
    assert len(frozen) == 1 and len(unfrozen) == 1
    damaged = frozen if which == "frozen" else frozen + unfrozen
    _damage(damaged, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        again = program_text(stencil().__sdfg__(*descriptors()))
    assert again == cold
    warnings = _damage_warnings(caplog)
    assert len(warnings) == 1 and all(str(path) in warnings[0] for path in damaged), warnings
    for path in frozen + unfrozen:
        dace.SDFG.from_file(str(path))  # written again, whole


def test_a_damaged_stencil_sdfg_is_found_when_another_domain_needs_it(gt_cache, monkeypatch, caplog):
    stencil().__sdfg__(*descriptors())
    frozen, unfrozen = _cached_sdfgs(gt_cache)
    _damage(unfrozen, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        stencil().__sdfg__(*descriptors())  # this origin and domain: the frozen SDFG alone, still whole
        assert _damage_warnings(caplog) == []
        other = FrozenStencil(smooth, backend="dace:cpu", origin={"_all_": (1, 1, 0), "far": (0, 0, 0)},
                              domain=(4, 4, 3))
        other.__sdfg__(*descriptors())  # another domain is frozen from the stencil's SDFG: damaged, made again
    warnings = _damage_warnings(caplog)
    assert len(warnings) == 1 and str(unfrozen[0]) in warnings[0], warnings
    dace.SDFG.from_file(str(unfrozen[0]))


@pytest.mark.parametrize("stamp", ["another toolchain", "none"])
def test_sdfgs_lowered_by_another_dace_are_removed_and_lowered_again(gt_cache, stamp, monkeypatch, caplog):
    """gt4py's content id does not hash DaCe's version: files an upgrade finds must not be read as this DaCe's."""
    cold = program_text(stencil().__sdfg__(*descriptors()))
    assert stencil().is_lowered()
    frozen, unfrozen = _cached_sdfgs(gt_cache)
    stamp_file = lowering_stamp_path(stencil().stencil_object.builder)
    assert stamp_file.read_text().startswith(f"dace {dace.__version__}, gt4py ")
    # an SDFG that loads but is not this stencil's lowering (what another DaCe's files may be: loadable, different)
    other = FrozenStencil(vertical, backend="dace:cpu", origin=(0, 0, 0), domain=(4, 4, 3))
    other_sdfg = other.__sdfg__(*[dace.data.Array(dace.float64, (4, 4, 3)) for _ in range(4)])
    for path in frozen + unfrozen:
        other_sdfg.save(str(path), compress=True)
    if stamp == "none":  # files from before an upgrade: older than this DaCe's installation
        stamp_file.unlink()
        installed = Path(dace.__file__).stat().st_mtime
        for path in frozen + unfrozen:
            os.utime(path, (installed - 3600, installed - 3600))
    else:
        stamp_file.write_text("dace 0.16.1, gt4py 1.0.4\n")
    monkeypatch.setattr(dace_backend.SDFGManager, "_loaded_sdfgs", {})  # a new process: only the files
    assert not stencil().is_lowered()  # a rank would lower it ahead
    with caplog.at_level(logging.INFO, logger="orchestra"):
        again = program_text(stencil().__sdfg__(*descriptors()))
    assert again == cold
    assert any("not stamped as lowered by" in record.getMessage() for record in caplog.records)
    assert stamp_file.read_text().startswith(f"dace {dace.__version__}, gt4py ")
    assert stencil().is_lowered()


def test_unstamped_sdfgs_gt4py_wrote_since_the_installation_are_kept_and_stamped(gt_cache, monkeypatch, caplog):
    """gt4py writes a stencil's SDFG itself when it runs stencil by stencil: no stamp, but this toolchain's."""
    cold = program_text(stencil().__sdfg__(*descriptors()))
    stamp_file = lowering_stamp_path(stencil().stencil_object.builder)
    stamp_file.unlink()
    monkeypatch.setattr(dace_backend.SDFGManager, "_loaded_sdfgs", {})
    assert stencil().is_lowered()
    nothing_recomputed(monkeypatch)
    with caplog.at_level(logging.INFO, logger="orchestra"):
        assert program_text(stencil().__sdfg__(*descriptors())) == cold
    assert not any("removing" in record.getMessage() for record in caplog.records)
    assert stamp_file.read_text().startswith(f"dace {dace.__version__}, gt4py ")
