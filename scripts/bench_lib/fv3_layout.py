"""The shape of the generated FV3-size model: its component tree and which stencils each component owns.

The tree follows PyFV3's acoustic step (``dyn_core.AcousticDynamics``):

* depth 0, ``AcousticDynamics``: halo updates, a ``dace_nounroll`` loop over
  the acoustic sub-steps, a few column stencils of its own, and the solvers;
* depth 1, the solvers (``CGridShallowWater``, ``DGridShallowWater``,
  ``VerticalSolver``, ...): column and wind stencils, and transport
  sub-components, each called for two fields;
* depth 2, ``FiniteVolumeTransport``-like components: flux divergence and
  damping stencils around an x and a y edge-value component, each called
  twice (inner and outer pass);
* depth 3, ``XPiecewiseParabolic``/``YPiecewiseParabolic``-like leaves:
  edge values with rows of their own at the tile edges, and limiters.

At the default 324 stencils (PyFV3's acoustic step has 324): 8 solvers of 40
stencils each and 4 of the root's, 57 components. A smaller ``stencils``
gives proportionally fewer solvers (and, below 20, one transport per
solver and fewer stencils per component): the same kind of model.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Iterator

#: relative share of the stencils per component kind (a solver block: 6 + 2 * 3 + 4 * 7 = 40)
WEIGHTS = {"root": 4, "solver": 6, "transport": 3, "leaf_x": 7, "leaf_y": 7}

#: stencil families each kind draws from, in turn (see fv3_stencils.FAMILIES)
FAMILY_CYCLE = {
    "root": ("column_forward", "winds", "column_backward", "tridiagonal"),
    "solver": ("tridiagonal", "column_forward", "winds", "column_backward", "damping", "edge_x", "edge_y"),
    "transport": ("flux_divergence", "damping"),
    "leaf_x": ("edge_x", "limiter"),
    "leaf_y": ("edge_y", "limiter"),
}

SOLVER_NAMES = ("CGridShallowWater", "DGridShallowWater", "VerticalSolverCGrid", "VerticalSolver",
                "NonhydrostaticPressureGradient", "UpdateHeightOnDGrid", "HyperdiffusionDamping",
                "RayleighDamping")


@dataclasses.dataclass
class Component:
    """One orchestrated component class of the generated model."""

    name: str
    kind: str
    depth: int
    children: list[Component] = dataclasses.field(default_factory=list)
    stencils: list[int] = dataclasses.field(default_factory=list)  #: global stencil indices it owns

    def walk(self) -> Iterator[Component]:
        """This component and every one below it, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()


def _tree(stencils: int) -> Component:
    """The component tree (no stencils yet) for a model of about ``stencils`` stencils."""
    solvers = max(1, round((stencils - WEIGHTS["root"]) / 40))
    transports = 2 if stencils >= 20 else 1
    root = Component("AcousticDynamics", "root", 0)
    for s in range(solvers):
        base = SOLVER_NAMES[s % len(SOLVER_NAMES)] + (str(s // len(SOLVER_NAMES)) if s >= len(SOLVER_NAMES) else "")
        solver = Component(base, "solver", 1)
        for t in range(transports):
            transport = Component(f"{base}Transport{t}", "transport", 2)
            transport.children = [Component(f"{base}Transport{t}XPPM", "leaf_x", 3),
                                  Component(f"{base}Transport{t}YPPM", "leaf_y", 3)]
            solver.children.append(transport)
        root.children.append(solver)
    return root


def _shares(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights``, at least one each (largest remainders)."""
    if total < len(weights):
        raise ValueError(f"{total} stencils are too few for {len(weights)} components (at least one each)")
    scale = total / sum(weights)
    shares = [max(1, math.floor(w * scale)) for w in weights]
    remainders = [w * scale - math.floor(w * scale) for w in weights]
    order = sorted(range(len(weights)), key=lambda i: remainders[i], reverse=True)
    position = 0
    while sum(shares) < total:
        shares[order[position % len(order)]] += 1
        position += 1
    while sum(shares) > total:  # minimums pushed it over: take from the largest
        shares[shares.index(max(shares))] -= 1
    return shares


def plan(stencils: int) -> Component:
    """The component tree of a model of exactly ``stencils`` stencils, each stencil owned by one component."""
    root = _tree(stencils)
    components = list(root.walk())
    shares = _shares(stencils, [WEIGHTS[c.kind] for c in components])
    index = 0
    for component, share in zip(components, shares):
        component.stencils = list(range(index, index + share))
        index += share
    return root


def edited_stencil(root: Component) -> int:
    """The stencil the benchmark's edit changes: the first of the first depth-3 component."""
    return next(c for c in root.walk() if c.depth == 3).stencils[0]


def family_of(component: Component, position: int) -> str:
    """The family of the ``position``-th stencil of ``component``."""
    cycle = FAMILY_CYCLE[component.kind]
    return cycle[position % len(cycle)]


def shape(root: Component) -> dict[str, int]:
    """Counts of the model: stencils, components, depth, components per depth."""
    components = list(root.walk())
    return {"stencils": sum(len(c.stencils) for c in components), "components": len(components),
            "depth": max(c.depth for c in components),
            **{f"components_at_depth_{d}": sum(c.depth == d for c in components)
               for d in range(max(c.depth for c in components) + 1)}}
