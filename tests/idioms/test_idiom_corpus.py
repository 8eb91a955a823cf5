"""Every idiom of the corpus orchestrates bit for bit equal to Python mode; refused ones say how to fix them.

One build per idiom (tiny arrays, a second or two each), all in one cache
for the module. The docs table (``docs/orchestration.md``) lists exactly the
idioms of the corpus.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from orchestra import DaceConfig, MissingBuildError
from orchestra.errors import BuildError
from tests.idioms.corpus import IDIOMS, StencilListByIndex, fields
from tests.idioms.refused import REFUSED

DOCS = Path(__file__).resolve().parents[2] / "docs" / "orchestration.md"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("idiom_cache")


def _config(mode: str, cache: Path) -> DaceConfig:
    return DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache, exit_after_build=False)


def _outcome(model, call) -> list[np.ndarray]:
    """Every array the run could change, then whatever the call returned, as bytes."""
    arrays = fields()
    returned = call(model, arrays)
    if isinstance(returned, tuple) and all(item is None for item in returned):
        returned = None  # several calls, none returning
    if returned is None:
        returned = ()
    elif not isinstance(returned, tuple):
        returned = (returned,)
    results = [arrays.x, arrays.y, arrays.z, *arrays.tracers.values(), arrays.quantity.data, arrays.state.u.data,
               arrays.state.v.data, *returned]
    return [np.ascontiguousarray(value).copy().view(np.uint8) for value in results]


@pytest.mark.parametrize("idiom", IDIOMS, ids=[i.model.__name__ for i in IDIOMS])
def test_idiom_orchestrates_bitwise_equal(idiom, cache):
    reference = idiom.model(_config("Python", cache))
    expected = [_outcome(reference, idiom.call) for _ in range(2)]  # the model's own arrays carry over
    model = idiom.model(_config("BuildAndRun", cache))
    got = [_outcome(model, idiom.call) for _ in range(2)]  # the second call takes the fast path
    for call, (want_arrays, got_arrays) in enumerate(zip(expected, got)):
        assert len(want_arrays) == len(got_arrays)
        for index, (want, have) in enumerate(zip(want_arrays, got_arrays)):
            assert np.array_equal(want, have), f"{idiom.name}: call {call + 1}, array {index} differs from Python mode"


@pytest.mark.parametrize("model, call, pattern", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_refused_idiom_names_the_line_and_the_fix(model, call, pattern, cache):
    with pytest.raises(BuildError) as raised:
        call(model(_config("BuildAndRun", cache)), fields())
    assert re.search(pattern, str(raised.value), re.S), str(raised.value)


def test_a_changed_list_or_bound_is_another_program(cache):
    """The unrolled loop's bound and each list element are build inputs: changed, they select another program."""
    from tests.idioms import stencils as st
    from tests.idioms.corpus import stencil

    def run(mode: str) -> list[np.ndarray]:
        config = _config(mode, cache)
        model, arrays, results = StencilListByIndex(config), fields(), []
        for change in (lambda: None,
                       lambda: setattr(model, "_nmax", 2),
                       lambda: model._stencils.__setitem__(1, stencil(config, st.copy_scaled)),
                       lambda: model._stencils.__setitem__(0, stencil(config, st.axpy, domain=(2, 2, 3)))):
            change()
            model(arrays.x, arrays.y)
            results.append(np.ascontiguousarray(arrays.y).copy().view(np.uint8))
        return results

    for want, got in zip(run("Python"), run("BuildAndRun")):
        assert np.array_equal(want, got)
    model, arrays = StencilListByIndex(_config("Run", cache)), fields()
    model(arrays.x, arrays.y)  # built above
    model._nmax = 1
    with pytest.raises(MissingBuildError, match=r"_nmax"):
        model(arrays.x, arrays.y)


def test_the_docs_table_lists_every_idiom():
    text = DOCS.read_text()
    missing = [idiom.name for idiom in IDIOMS if f"| {idiom.name} |" not in text]
    assert not missing, f"docs/orchestration.md lacks rows for {missing}"


def test_returned_objects_are_the_models_own(cache):
    """``return fx, self.delpc`` gives the very arrays, as in Python mode (not DaCe's copies)."""
    from tests.idioms.corpus import CGridSolver, EarlyReturn

    arrays = fields()
    solver = CGridSolver(_config("BuildAndRun", cache))
    delpc, ptc = solver(arrays.x, arrays.y)
    assert delpc is solver.delpc and ptc is solver.ptc
    fx, fy = EarlyReturn(_config("BuildAndRun", cache))(arrays.x, arrays.y)
    assert fx is arrays.x and fy is arrays.y


def test_an_argument_the_model_also_holds_is_refused_naming_both(cache):
    """``model(q)`` with ``self.held is q``: two program arrays over one memory would give wrong results."""
    from orchestra import StaleArgumentsError, orchestrate
    from tests.idioms import stencils as st
    from tests.idioms.corpus import stencil

    class HoldsItsArgument:
        def __init__(self, config, held):
            self._flux = stencil(config, st.flux_x)
            self._axpy = stencil(config, st.axpy)
            self.held, self.tmp = held, fields().z
            orchestrate(obj=self, config=config)

        def __call__(self, q, out):
            self._flux(q, self.tmp, 0.5)
            self._axpy(self.tmp, self.held, 1.0)
            self._flux(q, out, 0.5)

    arrays = fields()
    model = HoldsItsArgument(_config("BuildAndRun", cache), arrays.x)
    with pytest.raises(StaleArgumentsError, match=r"self\.held and argument 'q' share memory.*a copy"):
        model(arrays.x, arrays.y)
    model(fields().x, arrays.y)  # another array of the same numbers: runs


def test_one_array_of_two_expressions_is_refused_once_they_part(cache):
    """``self.inner.storage`` was ``self._tmp``'s memory at build time; reallocated alone, the call is refused."""
    from orchestra import StaleArgumentsError
    from tests.idioms.corpus import SharedTemporary

    arrays = fields()
    model = SharedTemporary(_config("BuildAndRun", cache))
    model(arrays.x, arrays.y)
    model.inner.storage = fields().z  # Python mode would now read another array here
    with pytest.raises(StaleArgumentsError, match=r"self\.storage and self\._tmp were the same array.*no longer"):
        model(arrays.x, arrays.y)
    model.inner.storage = model._tmp.data  # one array again: runs
    model(arrays.x, arrays.y)
