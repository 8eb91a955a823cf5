"""A halo exchanger that orchestrated code can call with no arguments.

Compiled (orchestrated) programs keep halo exchanges in Python as callbacks.
:class:`CallbackHaloExchanger` holds a model state object and the *names* of
the fields to exchange; each call looks the fields up with ``getattr`` at
call time, so arrays the model re-allocates are picked up. Its ``start``,
``wait`` and ``update`` are :func:`~orchestra.calls.callbacks.dace_inhibitor`
callbacks::

    self.halo = CallbackHaloExchanger(state, ["h"], [("u", "v")], updater=updater)
    ...
    def __call__(self):          # orchestrated
        self.step_one(...)
        self.halo.update()       # runs in Python, between the two stencils
        self.step_two(...)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from orchestra.calls.callbacks import dace_inhibitor
from orchestra.comm.halo import HaloUpdater


class CallbackHaloExchanger:
    """Exchange the halos of ``state``'s named scalar fields and vector pairs.

    ``updater`` is required (it is last and keyword-friendly to match the
    documented call ``CallbackHaloExchanger(state, scalars, vectors, updater)``).
    Scalars and vectors travel in one exchange.
    """

    def __init__(
        self,
        state: Any,
        scalar_names: Sequence[str] = (),
        vector_pairs: Sequence[tuple[str, str]] = (),
        updater: Optional[HaloUpdater] = None,
    ) -> None:
        if updater is None:
            raise TypeError("CallbackHaloExchanger needs updater=HaloUpdater(...)")
        if isinstance(scalar_names, str):
            raise TypeError(
                f"scalar_names must be a sequence of names, got the string {scalar_names!r}"
            )
        self._state = state
        self._scalar_names = tuple(scalar_names)
        self._vector_pairs = tuple((str(u), str(v)) for u, v in vector_pairs)
        self._updater = updater
        for name in (*self._scalar_names, *(n for pair in self._vector_pairs for n in pair)):
            if not hasattr(state, name):
                raise AttributeError(
                    f"state {type(state).__name__} has no field {name!r} to exchange"
                )

    @property
    def scalar_names(self) -> tuple[str, ...]:
        """Names of the scalar fields."""
        return self._scalar_names

    @property
    def vector_pairs(self) -> tuple[tuple[str, str], ...]:
        """Names of the ``(u, v)`` vector pairs."""
        return self._vector_pairs

    @property
    def updater(self) -> HaloUpdater:
        """The halo updater used."""
        return self._updater

    @dace_inhibitor
    def start(self) -> None:
        """Start exchanging the current arrays of every named field."""
        state = self._state
        self._updater.start_fields(
            [getattr(state, name) for name in self._scalar_names],
            [(getattr(state, u), getattr(state, v)) for u, v in self._vector_pairs],
        )

    @dace_inhibitor
    def wait(self) -> None:
        """Finish the exchange started by :meth:`start`."""
        self._updater.wait()

    @dace_inhibitor
    def update(self) -> None:
        """Exchange every named field (blocking)."""
        self.start()
        self.wait()
