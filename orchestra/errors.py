"""The exceptions orchestra raises. Each message names the object and the fix."""

from __future__ import annotations

import logging

log = logging.getLogger("orchestra")


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


def as_one_message(error: OrchestraError) -> OrchestraError:
    """``error`` as the caller's script sees it: orchestra's message alone, from the call into orchestra.

    orchestra's errors name the problem and the fix; the frames of orchestra
    and DaCe between the model's call and the raise, and the DaCe exception
    the message was made from (printed first, then "The above exception was
    the direct cause"), said it twice in up to 138 lines. The cause stays on
    the error as ``orchestra_cause`` and is logged at debug level;
    ``ORCHESTRA_TRACEBACK=1`` raises everything as it was.
    """
    cause = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    if cause is not None:
        log.debug("%s: caused by", type(error).__name__, exc_info=cause)
        error.orchestra_cause = cause  # type: ignore[attr-defined]
    error.__cause__, error.__context__, error.__suppress_context__ = None, None, True
    return error.with_traceback(None)


class VerificationError(OrchestraError):
    """``ORCHESTRA_VERIFY``: an orchestrated call computed other values than ``Python`` mode."""
