"""A halo exchanger that orchestrated code can call with no arguments (NDSL's ``WrappedHaloUpdater``).

Compiled (orchestrated) programs keep halo exchanges in Python as callbacks.
:class:`CallbackHaloExchanger` holds a model state (an object or a dict) and
the *names* of the fields to exchange; each call looks the fields up at call
time (``getattr``, or ``state[name]`` for a dict), so arrays the model
re-allocates are picked up. Its ``start``, ``wait``, ``update`` and
``interface`` are :func:`~orchestra.calls.callbacks.dace_inhibitor`
callbacks::

    self.halo = CallbackHaloExchanger(state, ["h"], [("u", "v")], updater=updater)
    self.edges = CallbackHaloExchanger(state, vector_pairs=[("u", "v")], comm=communicator)
    ...
    def __call__(self):          # orchestrated
        self.step_one(...)
        self.halo.update()       # runs in Python, between the two stencils
        self.step_two(...)
        self.edges.interface()   # Communicator.synchronize_vector_interfaces(state.u, state.v)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from orchestra.calls.callbacks import dace_inhibitor
from orchestra.comm.halo import HaloUpdater


class CallbackHaloExchanger:
    """Exchange the halos of ``state``'s named scalar fields and vector pairs.

    ``state`` is an object (fields are attributes) or a dict (fields are
    keys). ``updater`` (a :class:`HaloUpdater`) serves ``start``/``wait``/``update``;
    ``comm`` (a :class:`~orchestra.comm.communicator.Communicator`) serves
    ``interface``, which needs exactly one vector pair. At least one of the two
    is required. Scalars and vectors travel in one exchange.
    """

    def __init__(
        self,
        state: Any,
        scalar_names: Sequence[str] = (),
        vector_pairs: Sequence[tuple[str, str]] = (),
        updater: Optional[HaloUpdater] = None,
        comm: Any = None,
    ) -> None:
        if updater is None and comm is None:
            raise TypeError(
                "CallbackHaloExchanger needs updater=HaloUpdater(...) (for start/wait/update) "
                "or comm=Communicator (for interface)"
            )
        if isinstance(scalar_names, str):
            raise TypeError(
                f"scalar_names must be a sequence of names, got the string {scalar_names!r}"
            )
        self._state = state
        self._scalar_names = tuple(scalar_names)
        self._vector_pairs = tuple((str(u), str(v)) for u, v in vector_pairs)
        self._updater = updater
        self._comm = comm
        for name in (*self._scalar_names, *(n for pair in self._vector_pairs for n in pair)):
            if not (name in state if isinstance(state, dict) else hasattr(state, name)):
                raise AttributeError(
                    f"state {type(state).__name__} has no field {name!r} to exchange"
                )

    def _field(self, name: str) -> Any:
        return self._state[name] if isinstance(self._state, dict) else getattr(self._state, name)

    @property
    def scalar_names(self) -> tuple[str, ...]:
        """Names of the scalar fields."""
        return self._scalar_names

    @property
    def vector_pairs(self) -> tuple[tuple[str, str], ...]:
        """Names of the ``(u, v)`` vector pairs."""
        return self._vector_pairs

    @property
    def updater(self) -> Optional[HaloUpdater]:
        """The halo updater used (None: this exchanger only synchronizes interfaces)."""
        return self._updater

    def _need_updater(self) -> HaloUpdater:
        if self._updater is None:
            raise TypeError("this CallbackHaloExchanger was made without updater=: it can only interface()")
        return self._updater

    @dace_inhibitor
    def start(self) -> None:
        """Start exchanging the current arrays of every named field."""
        self._need_updater().start_fields(
            [self._field(name) for name in self._scalar_names],
            [(self._field(u), self._field(v)) for u, v in self._vector_pairs],
        )

    @dace_inhibitor
    def wait(self) -> None:
        """Finish the exchange started by :meth:`start`."""
        self._need_updater().wait()

    @dace_inhibitor
    def update(self) -> None:
        """Exchange every named field (blocking)."""
        self.start()
        self.wait()

    @dace_inhibitor
    def interface(self) -> None:
        """Make the edge points of the one vector pair agree with the neighbours'
        (:meth:`~orchestra.comm.communicator.Communicator.synchronize_vector_interfaces`)."""
        if self._comm is None or len(self._vector_pairs) != 1:
            raise TypeError(
                "interface() needs comm=Communicator and exactly one vector pair, got "
                f"comm={self._comm!r} and {len(self._vector_pairs)} pair(s)"
            )
        (x, y), = self._vector_pairs
        n_halo = None if self._updater is None else self._updater.n_halo  # Quantity-likes give theirs
        self._comm.synchronize_vector_interfaces(self._field(x), self._field(y), n_halo)
