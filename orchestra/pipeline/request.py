"""Steps 1 and 2 of a first call: the build request, then its key.

A :class:`BuildRequest` is what one rank asks for: a DaCe program, the call
that needs it and every option that shapes its build. :func:`key_request`
finds the program's build inputs without parsing (DaCe's closure resolution)
and fingerprints them: the :class:`KeyedRequest` is what the cache, the
distributed coordinator and the build step work from.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Optional

from orchestra.build_inputs import collect_build_inputs
from orchestra.call_tree import callees_in_tree
from orchestra.cache.fingerprint import fingerprint
from orchestra.cache.errors import CacheError
from orchestra.distributed import CodePathClass
from orchestra.errors import BuildError, OrchestraError
from orchestra.pipeline.diagnostics import explain_unreadable
from orchestra.pipeline.abstract_arrays import refuse_abstract_arrays
from orchestra.pipeline.stages import OptimizeOptions
from orchestra.toolchain import GpuTarget


@dataclasses.dataclass(frozen=True)
class BuildRequest:
    """One rank's request for the library of ``program`` called with ``args``/``kwargs``."""

    label: str  #: e.g. ``DynamicalCore.__call__``: the cache folder and every message use it
    program: Any  #: the DaceProgram
    function: Callable  #: the Python function the program was made from
    args: tuple
    kwargs: dict
    backend: str
    options: OptimizeOptions
    gpu: Optional[GpuTarget]  #: None for CPU builds
    runs: bool  #: the mode runs the program after building it (abstract arrays are refused)
    code_path: Optional[CodePathClass] = None  #: None without a partitioner
    tile: int = 0
    #: the job runs a split build (split_depth / split_at): a missing build is made by BuildAndRun, not Build
    split: bool = False

    def pipeline_key(self) -> dict[str, Any]:
        """The optimize options and the GPU target, as they enter the key."""
        pipeline = self.options.as_key()
        if self.gpu is not None:
            pipeline["cuda_arch"] = self.gpu.cuda_arch
            pipeline["gpu"] = self.gpu.as_key()
        return pipeline


@dataclasses.dataclass(frozen=True)
class KeyedRequest:
    """A request with its build inputs and their fingerprint, the cache key."""

    request: BuildRequest
    inputs: dict[str, Any]
    key: str
    #: every stencil and component the program calls, at any depth (not part of the key)
    callees: tuple = dataclasses.field(default=(), compare=False, repr=False)

    @property
    def label(self) -> str:
        return self.request.label


def key_request(request: BuildRequest) -> KeyedRequest:
    """[BuildRequest] -> [KeyedRequest]: build inputs found without parsing, then fingerprinted."""
    try:
        with warnings.catch_warnings():  # DaCe's parse warnings (loops it unrolls...): the build logs them
            warnings.simplefilter("ignore")
            inputs = collect_build_inputs(
                request.program,
                request.function,
                request.args,
                request.kwargs,
                backend=request.backend,
                pipeline=request.pipeline_key(),
            )
    except (OrchestraError, CacheError):
        raise
    except Exception as error:  # DaCe could not read the program (closure resolution)
        raise BuildError(explain_unreadable(error, request.label, request.function, "reading")) from error
    if request.runs:
        refuse_abstract_arrays(request.label, request.program, request.args, request.kwargs)
    callees = tuple(callees_in_tree(request.program.resolver))
    return KeyedRequest(request, inputs, fingerprint(inputs), callees)
