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
from typing import Any, Callable, Optional, Protocol

from orchestra.key.inputs import collect_build_inputs
from orchestra.key.call_tree import callees_in_tree
from orchestra.cache.fingerprint import fingerprint
from orchestra.cache.errors import CacheError
from orchestra.distributed.coordinator import CodePathClass, code_path_class
from orchestra.errors import BuildError, OrchestraError
from orchestra.pipeline.diagnostics import explain_unreadable
from orchestra.pipeline.abstract_arrays import refuse_abstract_arrays
from orchestra.pipeline.stages import OptimizeOptions
from orchestra.toolchain import GpuTarget



class OrchestratedCall(Protocol):
    """What obtaining a program needs of an orchestrated program (:class:`orchestra.orchestrate.OrchestratedProgram`).

    A protocol, not an import: the orchestrated program calls into the
    pipeline, so the two would import each other.
    """

    label: str
    config: Any
    function: Callable
    method_object: Any
    clock: Any
    split: Any

    def current_program(self, args: Optional[tuple] = None) -> Any: ...


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


def request_for(program: OrchestratedCall, args: tuple, kwargs: dict, gpu: Optional[GpuTarget]) -> BuildRequest:
    """[an orchestrated program's call] -> BuildRequest: what to build, with the job's options and code path."""
    config = program.config
    code_path, tile = _code_path(config.communicator)
    return BuildRequest(
        label=program.label,
        program=program.current_program(args),
        function=program.function,
        args=args,
        kwargs=kwargs,
        backend=config.backend,
        options=OptimizeOptions(
            on_gpu=config.on_gpu,
            debug_checks=config.debug_checks,
            save_stages=config.verbose,
            fusion_block_bytes=config.fusion_block_bytes,
            kernel_timers=config.profile == "kernels",
            **({} if config.cpu_passes is None else {"cpu_passes": config.cpu_passes}),
        ),
        gpu=gpu,
        runs=config.orchestration.runs,
        code_path=code_path,
        tile=tile,
        split=bool(config.split_depth or config.split_at),
    )


def _code_path(communicator: Any) -> tuple[Optional[CodePathClass], int]:
    """This rank's code-path class and tile (None, 0 without a partitioner)."""
    partitioner = getattr(communicator, "partitioner", None)
    if partitioner is None:
        return None, 0
    rank = communicator.rank
    return code_path_class(partitioner, rank), int(partitioner.tile_index(rank))


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
