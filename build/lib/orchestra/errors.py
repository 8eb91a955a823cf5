"""The exceptions orchestra raises. Each message names the object and the fix."""

from __future__ import annotations


class OrchestraError(Exception):
    """Base class of every error orchestra raises on purpose."""


class ConfigurationError(OrchestraError, ValueError):
    """A setting (environment variable, DaceConfig field, backend) is invalid."""


class BuildError(OrchestraError):
    """Parsing, optimizing or compiling an orchestrated program failed."""


class MissingBuildError(OrchestraError):
    """``Run`` mode found no usable build for this program (it never compiles)."""


class StaleArgumentsError(OrchestraError, TypeError):
    """A call passed arrays that do not match what the program was built for."""


class RankDisagreementError(OrchestraError):
    """Ranks that must share one build computed different build inputs."""


class StencilArgumentError(BuildError, ValueError):
    """A stencil call in orchestrated code passes arguments Python mode would refuse."""
