"""A model whose module name is no identifier still orchestrates (DaCe names the program after it)."""

from __future__ import annotations

import importlib.util
import runpy
import textwrap

import numpy as np

MODEL = textwrap.dedent('''
    import numpy as np
    from orchestra import DaceConfig, orchestrate

    class Model:
        def __init__(self, cache_root):
            self.a = np.arange(4.0)
            orchestrate(obj=self, config=DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun",
                                                    cache_root=cache_root))

        def __call__(self, q):
            self.a[:] = self.a * 2.0 + q
''')


def test_a_model_run_by_runpy_run_path(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    namespace = runpy.run_path(str(tmp_path / "model.py"))  # module "<run_path>"
    model = namespace["Model"](tmp_path / "cache")
    model(np.ones(4))
    assert model.a.tolist() == [1.0, 3.0, 5.0, 7.0]


def test_a_model_loaded_from_a_file_whose_name_has_a_dash(tmp_path):
    (tmp_path / "my-model.py").write_text(MODEL)
    spec = importlib.util.spec_from_file_location("my-model", tmp_path / "my-model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Model(tmp_path / "cache")
    model(np.ones(4))
    model(np.ones(4))
    assert model.a.tolist() == [3.0, 7.0, 11.0, 15.0]
