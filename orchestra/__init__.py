"""orchestra: whole-program orchestration of gt4py stencil models with DaCe.

Public API::

    from orchestra import orchestrate, orchestrate_function, dace_inhibitor
    from orchestra import DaceConfig, DaCeOrchestration, FrozenStencil, Scratch
    from orchestra import abstract_device_storage, builds_without_device
    from orchestra import timing_report
    from orchestra import kernel_report

See ``docs/orchestration.md`` for a walk-through.
"""

from orchestra.calls.callbacks import dace_inhibitor
from orchestra.config import DaceConfig, DaCeOrchestration
from orchestra.errors import (
    BuildError,
    ConfigurationError,
    MissingBuildError,
    OrchestraError,
    RankDisagreementError,
    StaleArgumentsError,
    VerificationError,
)
from orchestra.pipeline.abstract_arrays import abstract_device_storage, builds_without_device
from orchestra.calls.arguments import compiletime_type
from orchestra.orchestrate import orchestrate, orchestrate_function
from orchestra.stencils.frozen import FrozenStencil
from orchestra.stencils.scratch import Scratch
from orchestra.observe.kernel_profile import kernel_report
from orchestra.observe.timings import timing_report
from orchestra.toolchain import prepare_gt4py

prepare_gt4py()

__version__ = "0.1.0"

__all__ = [
    "BuildError",
    "ConfigurationError",
    "DaCeOrchestration",
    "DaceConfig",
    "FrozenStencil",
    "MissingBuildError",
    "OrchestraError",
    "RankDisagreementError",
    "Scratch",
    "StaleArgumentsError",
    "VerificationError",
    "abstract_device_storage",
    "builds_without_device",
    "compiletime_type",
    "dace_inhibitor",
    "kernel_report",
    "orchestrate",
    "orchestrate_function",
    "timing_report",
]
