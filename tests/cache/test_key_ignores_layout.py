"""Comments, blank lines, docstrings and unrelated functions never change a build's key.

A build a comment can invalidate cannot be shipped to a ``Run``-only job: the
key names what the program reads by where it is (``state.tracers['qc']``,
``self.stencils[1]``), never by a name carrying a source line (DaCe called
the elements of a loop it unrolls ``gen<line>_<i>``). The test generates the
edits from the files' own syntax: before every statement of the idiom corpus
and of the NDSL-style tracer advection a comment and a blank line, a
docstring opening every function and class body, an unrelated function
before every top-level definition; every model's key must stay what it was.
Edits that change what a program computes still change it
(``test_call_tree_key.py``).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.cache.model_variants import key_of, load_model_module
from tests.layout_noise import with_layout_noise
from tests.idioms.stencils import SHAPE

IDIOMS_FOLDER = Path(__file__).resolve().parents[1] / "idioms"


class _Recorder:
    """Stands in for a model in an idiom's call: records the arguments of ``model(...)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple, dict]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append((args, kwargs))


def _corpus_keys(module: Any) -> dict[str, str]:
    from orchestra import DaceConfig

    config = DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=Path("/nonexistent"))
    keys = {}
    for idiom in module.IDIOMS:
        recorder = _Recorder()
        try:
            idiom.call(recorder, module.fields())
        except Exception:  # an idiom calling another method than __call__: not covered here
            continue
        if len(recorder.calls) != 1 or recorder.calls[0][1]:
            continue
        model = idiom.model(config)
        if "__call__" not in getattr(model, "__dict__", {}).get("__orchestra_programs__", {}):
            continue
        keys[idiom.model.__name__] = key_of(model, *recorder.calls[0][0])[0]
    return keys


def test_the_noise_is_what_it_says():
    text = "import math\n\n\nclass A:\n    @staticmethod\n    def f(x):\n        if x:\n            return 1\n        return 2\n"
    noisy = with_layout_noise(text)
    assert "def _unrelated_1():" in noisy and '"""A docstring a user added."""' in noisy
    assert noisy.count("# a comment a user added") == 6  # import, class, def, if, two returns
    namespace: dict = {}
    exec(compile(noisy, "<noisy>", "exec"), namespace)  # still the same program
    assert namespace["A"].f(True) == 1 and namespace["A"].f(False) == 2


def test_no_comment_docstring_or_unrelated_function_changes_a_corpus_key(tmp_path):
    text = (IDIOMS_FOLDER / "corpus.py").read_text()
    original = _corpus_keys(load_model_module(text, tmp_path / "original", "corpus_layout_variant"))
    noisy = _corpus_keys(load_model_module(with_layout_noise(text), tmp_path / "noisy", "corpus_layout_variant"))
    assert len(original) >= 80, sorted(original)  # nearly the whole corpus is covered
    assert "TracerValues" in original and "StatePassedDown" in original  # loops DaCe unrolls, named by path
    changed = sorted(name for name in original if noisy.get(name) != original[name])
    assert not changed, f"layout changed the key of {changed}"


def test_no_comment_changes_the_key_of_an_ndsl_style_tracer_advection(tmp_path):
    from orchestra import DaceConfig
    from tests.idioms.ndsl_style.infrastructure import GridIndexing, QuantityFactory, StencilFactory
    from tests.idioms.ndsl_style.transport import FiniteVolumeTransport

    grid = GridIndexing(nx=6, ny=5, nz=3)
    config = DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path / "none")
    text = (IDIOMS_FOLDER / "ndsl_style" / "tracer_advection.py").read_text()

    def key(source: str, folder: str) -> str:
        module = load_model_module(source, tmp_path / folder, "tracer_advection_variant")
        stencils, quantities = StencilFactory(config, grid), QuantityFactory(config, grid)
        area = quantities.random(1, 0.8, 1.2)
        grid_data = SimpleNamespace(area=area.data[:, :, 0].copy(), rarea=1.0 / area.data[:, :, 0])
        tracers = {"qvapor": quantities.random(11, 0.0, 1.0), "qliquid": quantities.random(12, 0.0, 1.0)}
        transport = FiniteVolumeTransport(stencils, quantities, grid_data, nord=1, damp_c=0.06)
        advection = module.TracerAdvection(stencils, quantities, transport, grid_data, tracers)
        arrays = [quantities.random(seed) for seed in range(13, 18)]
        return key_of(advection, tracers, *arrays)[0]

    assert key(with_layout_noise(text), "noisy") == key(text, "original")


@pytest.mark.parametrize("edit", ["comment", "docstring"])
def test_a_layout_edit_above_a_tracer_loop_keeps_the_build_usable_in_run_mode(edit, tmp_path):
    """The user's trap, end to end: build, add a comment (or docstring) above the loop, ``Run`` finds the build."""
    import numpy as np

    from orchestra import DaceConfig

    source = '''
import numpy as np
from orchestra import FrozenStencil, orchestrate
from tests.idioms import stencils as st


class Model:
    def __init__(self, config):
        self.scale = FrozenStencil(st.scale, backend=config.backend, origin=st.ORIGIN, domain=st.DOMAIN)
        orchestrate(obj=self, config=config)

    def __call__(self, state, dt: float):
        for q in state.tracers.values():
            self.scale(q, dt)
'''
    edited = source.replace("        for q in", {"comment": "        # scale every tracer\n",
                                               "docstring": '        """Scale the tracers."""\n'}[edit]
                            + "        for q in")

    def run(text: str, mode: str, folder: str) -> list:
        module = load_model_module(text, tmp_path / folder, "layout_run_model")
        config = DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=tmp_path / "cache",
                            exit_after_build=False)
        state = SimpleNamespace(tracers={name: np.full(SHAPE, value) for name, value in (("qv", 1.0), ("qc", 2.0))})
        module.Model(config)(state, 3)  # an int for dt: the float program
        return [q.copy() for q in state.tracers.values()]

    built = run(source, "BuildAndRun", "original")
    assert [float(q.sum()) for q in run(edited, "Run", "edited")] == [float(q.sum()) for q in built]

