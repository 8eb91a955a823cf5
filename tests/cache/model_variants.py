"""Variants of a test model's source, imported under one module name, and their build keys.

The call-tree key tests and the parse-audit tests load the text of
``call_tree_model.py`` (or an edited copy) as the module
``call_tree_model_variant``: every variant has the same module name, so keys
differ only by what the edit changed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

from orchestra import DaceConfig
from orchestra.key.inputs import collect_build_inputs
from orchestra.cache.fingerprint import fingerprint
from orchestra.toolchain import dace_settings

BACKEND = "dace:cpu"
MODEL_FILE = Path(__file__).with_name("call_tree_model.py")
MODULE = "call_tree_model_variant"


def load_model_module(text: str, folder: Path, name: str = MODULE) -> Any:
    """Import ``text`` as the module ``name`` (default ``call_tree_model_variant``: one name for every variant)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(text)
    sys.modules.pop(name, None)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def config(mode: str = "BuildAndRun", cache: Path = Path("/nonexistent")) -> DaceConfig:
    return DaceConfig(None, backend=BACKEND, orchestration=mode, cache_root=cache)


def state(module: Any) -> Any:
    """The model's field, with distinct values."""
    from gt4py import storage

    q = storage.zeros(module.SHAPE, np.float64, backend=BACKEND)
    q[...] = np.arange(np.prod(module.SHAPE), dtype=np.float64).reshape(module.SHAPE) / 10.0
    return q


def key_of(model: Any, *args: Any) -> tuple[str, dict]:
    """The cache key of ``model.__call__(*args)`` and its build inputs (no parse)."""
    program = model.__orchestra_programs__["__call__"]
    dace_program = program.dace_program(args)
    with dace_settings():
        inputs = collect_build_inputs(dace_program, program.function, args, {}, backend=BACKEND, pipeline={})
    return fingerprint(inputs), inputs
