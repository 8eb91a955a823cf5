"""The optimized program validated in a forked process while its code is generated.

DaCe's validation of the whole optimized program is the optimize stage's
last step: a read-only walk of every state, node and memlet (5-14 s of the
FV3-size benchmark at 40-120 stencils, growing with the program), on one
core, after which code generation, also one core, runs. The builder's other
cores idle through both.

:func:`validate_beside` forks the builder (:mod:`orchestra.pipeline.forked_child`):
the child validates the program as optimize left it (code generation changing
the parent's program does not reach it) and reports one line; the parent goes
on generating code. Before anything is compiled,
:meth:`PendingValidation.verdict` waits for the child and raises what
validating in place would have raised, with the same message (``optimizing
<program> failed: <DaCe's message>``); an invalid program is never compiled,
and a code-generation error after an invalid program reports the invalid
program. Nothing the child does reaches the parent but that line and, for an
invalid program, DaCe's copy of it in ``_dacegraphs/`` (which the build moves
into its staging folder, as before).

Where no fork is possible (not Linux), or ``ORCHESTRA_VALIDATE_BESIDE=0``,
the program is validated in place, as before. A child lost without a verdict
(killed, or stalled) fails the build with a message saying so and how to
validate in place: the parent's program has been changed by code generation
by then (DaCe sets default storage types, and the changed program no longer
validates), so the build never skips the validation, never validates the
wrong program, and never hangs on it.
"""

from __future__ import annotations

from typing import Any, Optional

from orchestra.errors import BuildError
from orchestra.pipeline.forked_child import VARIABLE, ForkedChild, fork_work, forking_allowed


class PendingValidation:
    """A program's validation under way in a child process (or already done in place).

    It owns the child: a copy of it (``copy.deepcopy`` of an optimized
    program, compiled several times) is the same object, so one verdict is
    waited for once and every caller gets it; pickled, it is the verdict.
    """

    def __init__(self, name: str, child: Optional[ForkedChild] = None) -> None:
        self._name, self._child = name, child
        #: the validating child's process id (None: validated in place)
        self.child = None if child is None else child.pid
        self._failure: Optional[str] = None  # the verdict's message, once it is known and not valid

    def verdict(self) -> None:
        """Wait for the validation (once); raise :class:`BuildError` if the program is invalid, at every call."""
        if self._child is not None:
            message, lost = self._child.outcome()
            self._child = None
            if lost:  # the parent's program has changed since the fork (code generation): it cannot be validated here
                self._failure = (f"validating {self._name} in a forked process failed ({lost}); nothing was "
                                 f"compiled. Build again, or with {VARIABLE}=0 to validate the program in place")
            elif message is not None:
                self._failure = _invalid(self._name, message)
        if self._failure is not None:
            raise BuildError(self._failure)

    def __deepcopy__(self, memo: dict) -> PendingValidation:
        return self

    def __copy__(self) -> PendingValidation:
        return self

    def __reduce__(self) -> tuple:
        try:
            self.verdict()
        except BuildError:
            pass
        return _decided, (self._name, self._failure)

    def abandon(self) -> None:
        """Stop the child without a verdict (the build failed for another reason)."""
        if self._child is not None:
            self._child.kill()
            self._child = None
            self._failure = f"the validation of {self._name} was abandoned before its verdict"

    def __del__(self) -> None:
        try:
            self.abandon()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


def _decided(name: str, failure: Optional[str]) -> PendingValidation:
    """A validation whose verdict is known (unpickled)."""
    validation = PendingValidation(name)
    validation._failure = failure
    return validation


def validate_in_place(sdfg: Any, name: str) -> None:
    """DaCe's validation of ``sdfg`` here; an invalid program is a :class:`BuildError` naming ``name``."""
    try:
        sdfg.validate()
    except Exception as error:
        raise BuildError(_invalid(name, str(error))) from error


def _invalid(name: str, message: str) -> str:
    """The build's message for an invalid optimized program, whichever process validated it."""
    return f"optimizing {name} failed: {message}"


def validate_beside(sdfg: Any, name: str) -> PendingValidation:
    """Validate ``sdfg`` in a forked child (module docstring); in place where that cannot be."""
    if not forking_allowed():
        validate_in_place(sdfg, name)
        return PendingValidation(name)
    return PendingValidation(name, fork_work(sdfg.validate))
