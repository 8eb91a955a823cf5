"""Stencil families of FV3's kind for the generated build benchmark (``scripts/bench_fv3_build.py``).

Written for the benchmark in our own words, in the shape of PyFV3's acoustic
step: piecewise-parabolic edge values with special rows at the tile edges
(``horizontal(region[I[0], :])``, ``region[:, J[-1]]``), flux-form updates
over cell areas, damping by Laplacians with corner regions, column sweeps
(``FORWARD``/``BACKWARD`` with ``interval(0, 1)``/``interval(1, None)``) with
``exp``/``log``/``sqrt``, externals and scalar parameters; 5 to 12 fields
each. Every instance gets constants of its own (from its index), so each is
a distinct gt4py definition that gt4py lowers by itself.

Each output is a weighted sum of bounded terms whose weights sum to at most
one, so values stay bounded through hundreds of chained stencils and many
sub-steps (no overflow, no NaN: the bitwise check compares finite numbers).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

#: (parameter name, kind, role): kind "F" a 3-D field, "IJ" a 2-D grid field, "s" a float scalar;
#: role "in" read, "out" written (never read with an offset in the same stencil)
Param = tuple[str, str, str]


@dataclasses.dataclass(frozen=True)
class Family:
    """One kind of stencil: its parameters, its externals, and its body's text for given constants."""

    name: str
    params: tuple[Param, ...]
    externals: tuple[str, ...]
    body: Callable[[dict[str, float]], str]


def constants(index: int, edits: int = 0) -> dict[str, float]:
    """Stencil ``index``'s constants; ``edits`` shifts ``a`` (the edit of one stencil deep inside).

    ``a`` + ``b`` + ``d`` + ``c`` = 1 with every one positive: the weights of a bounded update.
    """
    def frac(k: int) -> float:
        """A number in [0, 1) of the index and ``k``, spread by the golden ratio."""
        return ((index + 1) * 0.6180339887 + k * 0.3819660113) % 1.0

    a = 0.2 + 0.25 * frac(0) + 0.001 * edits
    b = 0.1 + 0.15 * frac(1)
    d = 0.05 + 0.1 * frac(2)
    c = 1.0 - a - b - d
    return {"a": round(a, 6), "b": round(b, 6), "c": round(c, 6), "d": round(d, 6),
            "e": round(0.05 + 0.05 * frac(3), 6), "k": round(0.5 + frac(4), 6)}


def _edge_x(c: dict[str, float]) -> str:
    """Piecewise-parabolic edge values and fluxes along x, rows of their own at the tile's west and east edges."""
    return f"""
    from __externals__ import EDGE_W
    with computation(PARALLEL), interval(...):
        al = 0.5 * (q[-1, 0, 0] + q) + {c['e']} * (q[-1, 0, 0] - q[-2, 0, 0] + q[0, 0, 0] - q[1, 0, 0])
        with horizontal(region[I[0], :], region[I[-1], :]):
            al = 0.5 * (q[-1, 0, 0] + q) + EDGE_W * dxa * (q - q[-1, 0, 0]) / (1.0 + dxa)
        cr = courant / (1.0 + abs(courant))
        if cr > 0.0:
            flux = q[-1, 0, 0] + (1.0 - cr) * (al - q[-1, 0, 0])
        else:
            flux = q + (1.0 + cr) * (al - q)
        al_out = {c['a']} * al + {c['b']} * wgt + {c['c']} * q + {c['d']} * exp(-cr * cr)
        fx = 0.5 * cr * flux
        smooth = {c['a']} * q[1, 0, 0] + {c['b']} * q[-1, 0, 0] + {c['c']} * wgt + {c['d']} * cr
"""


def _edge_y(c: dict[str, float]) -> str:
    """The same along y, rows of their own at the tile's south and north edges."""
    return f"""
    from __externals__ import EDGE_W
    with computation(PARALLEL), interval(...):
        al = 0.5 * (q[0, -1, 0] + q) + {c['e']} * (q[0, -1, 0] - q[0, -2, 0] + q[0, 0, 0] - q[0, 1, 0])
        with horizontal(region[:, J[0]], region[:, J[-1]]):
            al = 0.5 * (q[0, -1, 0] + q) + EDGE_W * dxa * (q - q[0, -1, 0]) / (1.0 + dxa)
        cr = courant / (1.0 + abs(courant))
        if cr > 0.0:
            flux = q[0, -1, 0] + (1.0 - cr) * (al - q[0, -1, 0])
        else:
            flux = q + (1.0 + cr) * (al - q)
        al_out = {c['a']} * al + {c['b']} * wgt + {c['c']} * q + {c['d']} * exp(-cr * cr)
        fy = 0.5 * cr * flux
        smooth = {c['a']} * q[0, 1, 0] + {c['b']} * q[0, -1, 0] + {c['c']} * wgt + {c['d']} * cr
"""


def _limiter(c: dict[str, float]) -> str:
    """A monotonicity limiter of edge values, switched off at the tile's four corners."""
    return f"""
    from __externals__ import LIM
    with computation(PARALLEL), interval(...):
        dm = 0.25 * (q[1, 0, 0] - q[-1, 0, 0])
        dq = min(abs(dm), LIM * abs(q - bl))
        if dm < 0.0:
            dq = -dq
        with horizontal(region[I[0], J[0]], region[I[-1], J[-1]], region[I[0], J[-1]], region[I[-1], J[0]]):
            dq = 0.0
        bl_out = {c['a']} * bl + {c['b']} * q + {c['c']} * br + {c['d']} * dq / (1.0 + abs(dq))
        br_out = {c['a']} * br + {c['b']} * bl + {c['c']} * q - {c['d']} * dq / (1.0 + abs(dq))
"""


def _flux_divergence(c: dict[str, float]) -> str:
    """A flux-form update of a field and its mass over the cell areas."""
    return f"""
    with computation(PARALLEL), interval(...):
        div = (fx - fx[1, 0, 0] + fy - fy[0, 1, 0]) * rarea
        dpn = (1.0 - {c['e']}) * mass + {c['e']} * dt / (1.0 + dt) * div / (1.0 + abs(div))
        q_out = {c['a']} * q + {c['b']} * dpn + {c['c']} * mass + {c['d']} * area / (1.0 + area)
        dp_out = {c['a']} * mass + {c['b']} * q + {c['c']} * dpn + {c['d']} * exp(-abs(div))
        with horizontal(region[I[0], :], region[:, J[0]]):
            dp_out = mass
"""


def _damping(c: dict[str, float]) -> str:
    """Damping fluxes from a Laplacian, with corner regions (as FV3's del-n damping)."""
    return f"""
    from __externals__ import DAMP_FRACTION
    with computation(PARALLEL), interval(...):
        d2 = (q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0] - 4.0 * q) * rarea / (1.0 + rarea)
        with horizontal(region[I[0], J[0]], region[I[-1], J[-1]]):
            d2 = 0.0
        with horizontal(region[I[0], J[-1]], region[I[-1], J[0]]):
            d2 = 0.5 * d2
        fx2 = {c['a']} * (d2[-1, 0, 0] - d2) * damp / (1.0 + abs(damp))
        fy2 = {c['a']} * (d2[0, -1, 0] - d2) * damp / (1.0 + abs(damp))
        q_out = {c['a']} * q + {c['b']} * mass + {c['c']} * q[0, 0, 0] + DAMP_FRACTION * {c['d']} * d2 / (1.0 + abs(d2))
"""


def _column_forward(c: dict[str, float]) -> str:
    """Interface pressure summed down the column (FORWARD), its log and an exp of it."""
    return f"""
    with computation(FORWARD):
        with interval(0, 1):
            pe = {c['a']} * ptop + {c['b']} * delp + {c['c']} * pt + {c['d']}
            peln = log(1.0 + pe * pe) / (2.0 + log(1.0 + pe * pe))
        with interval(1, None):
            pe = {c['a']} * pe[0, 0, -1] + {c['b']} * delp[0, 0, -1] + {c['c']} * pt + {c['d']} * exp(-abs(delp))
            peln = log(1.0 + pe * pe) / (2.0 + log(1.0 + pe * pe))
    with computation(PARALLEL), interval(...):
        pk = {c['a']} * pe + {c['b']} * exp({c['e']} * peln) / (1.0 + exp({c['e']} * peln)) + {c['c']} * delz
"""


def _column_backward(c: dict[str, float]) -> str:
    """Geopotential summed up from the surface (BACKWARD)."""
    return f"""
    with computation(BACKWARD):
        with interval(-1, None):
            gz = {c['a']} * zs + {c['b']} * delz + {c['c']} * pt
        with interval(0, -1):
            gz = {c['a']} * gz[0, 0, 1] + {c['b']} * delz + {c['c']} * pt + {c['d']} * exp(-pt * pt)
    with computation(PARALLEL), interval(...):
        zh = {c['a']} * gz + {c['b']} * zs + {c['c']} * delz + {c['d']} * sqrt(1.0 + w * w) / (1.0 + abs(w) + {c['k']})
"""


def _tridiagonal(c: dict[str, float]) -> str:
    """A tridiagonal column solve (FORWARD elimination, BACKWARD substitution), as the Riemann solvers."""
    return f"""
    with computation(PARALLEL), interval(...):
        aa = {c['e']} * dt / (1.0 + dt) * (1.0 + pt * pt) / (2.0 + pt * pt)
        bb = 2.0 + aa
    with computation(FORWARD):
        with interval(0, 1):
            gam = 0.0
            ww = w / bb
        with interval(1, None):
            gam = aa[0, 0, -1] / bb[0, 0, -1]
            ww = (w + aa * ww[0, 0, -1]) / (bb - aa * gam)
    with computation(BACKWARD):
        with interval(-1, None):
            w_out = {c['a']} * ww + {c['b']} * delp + {c['c']} * pe + {c['d']} * q_con / (1.0 + abs(q_con))
        with interval(0, -1):
            w_out = {c['a']} * (ww - gam[0, 0, 1] * w_out[0, 0, 1]) + {c['b']} * delp + {c['c']} * pe
    with computation(PARALLEL), interval(...):
        pk = {c['a']} * pe + {c['b']} * sqrt(1.0 + delz * delz) / (1.0 + abs(delz)) + {c['c']} * cappa
"""


def _winds(c: dict[str, float]) -> str:
    """Kinetic energy, vorticity with edge rows, wind updates and heating from dissipation (sqrt)."""
    return f"""
    with computation(PARALLEL), interval(...):
        ke = 0.5 * (ua * ua + va * va)
        vort = (v[1, 0, 0] - v) - (u[0, 1, 0] - u)
        with horizontal(region[I[0], :], region[I[-1], :]):
            vort = 0.5 * vort
        with horizontal(region[:, J[0]], region[:, J[-1]]):
            vort = 0.25 * vort
        speed = sqrt(1.0 + ke) / (1.0 + sqrt(ke))
        u_out = {c['a']} * u + {c['b']} * uc + {c['c']} * speed + {c['d']} * dt / (1.0 + dt) * vort / (1.0 + abs(vort))
        v_out = {c['a']} * v + {c['b']} * vc + {c['c']} * speed - {c['d']} * dt / (1.0 + dt) * vort / (1.0 + abs(vort))
        ke_out = {c['a']} * delp + {c['b']} * pt + {c['c']} * speed
        heat = {c['a']} * pt + {c['b']} * ke / (1.0 + ke) + {c['c']} * delp
"""


F, IJ, S = "F", "IJ", "s"

FAMILIES: dict[str, Family] = {family.name: family for family in (
    Family("edge_x", (("q", F, "in"), ("courant", F, "in"), ("wgt", F, "in"), ("dxa", IJ, "in"),
                      ("al_out", F, "out"), ("fx", F, "out"), ("smooth", F, "out")), ("EDGE_W",), _edge_x),
    Family("edge_y", (("q", F, "in"), ("courant", F, "in"), ("wgt", F, "in"), ("dxa", IJ, "in"),
                      ("al_out", F, "out"), ("fy", F, "out"), ("smooth", F, "out")), ("EDGE_W",), _edge_y),
    Family("limiter", (("q", F, "in"), ("bl", F, "in"), ("br", F, "in"), ("bl_out", F, "out"),
                       ("br_out", F, "out")), ("LIM",), _limiter),
    Family("flux_divergence", (("q", F, "in"), ("fx", F, "in"), ("fy", F, "in"), ("mass", F, "in"),
                               ("area", IJ, "in"), ("rarea", IJ, "in"), ("q_out", F, "out"),
                               ("dp_out", F, "out"), ("dt", S, "in")), (), _flux_divergence),
    Family("damping", (("q", F, "in"), ("mass", F, "in"), ("rarea", IJ, "in"), ("fx2", F, "out"),
                       ("fy2", F, "out"), ("q_out", F, "out"), ("damp", S, "in")), ("DAMP_FRACTION",), _damping),
    Family("column_forward", (("delp", F, "in"), ("pt", F, "in"), ("delz", F, "in"), ("pe", F, "out"),
                              ("peln", F, "out"), ("pk", F, "out"), ("ptop", S, "in")), (), _column_forward),
    Family("column_backward", (("zs", F, "in"), ("delz", F, "in"), ("pt", F, "in"), ("w", F, "in"),
                               ("gz", F, "out"), ("zh", F, "out")), (), _column_backward),
    Family("tridiagonal", (("w", F, "in"), ("delp", F, "in"), ("pt", F, "in"), ("pe", F, "in"), ("q_con", F, "in"),
                           ("delz", F, "in"), ("cappa", F, "in"), ("w_out", F, "out"), ("pk", F, "out"),
                           ("dt", S, "in")), (), _tridiagonal),
    Family("winds", (("u", F, "in"), ("v", F, "in"), ("uc", F, "in"), ("vc", F, "in"), ("ua", F, "in"),
                     ("va", F, "in"), ("delp", F, "in"), ("pt", F, "in"), ("u_out", F, "out"), ("v_out", F, "out"),
                     ("ke_out", F, "out"), ("heat", F, "out"), ("dt", S, "in")), (), _winds),
)}


def stencil_source(family: Family, name: str, index: int, edits: int = 0) -> str:
    """The gtscript definition of stencil ``index`` of ``family``, named ``name``."""
    kinds = {F: "F", IJ: "FIJ", S: "float"}
    signature = ", ".join(f"{param}: {kinds[kind]}" for param, kind, _ in family.params)
    return f"\n\ndef {name}({signature}):{family.body(constants(index, edits))}"


def external_values(family: Family, index: int) -> dict[str, float]:
    """The externals of stencil ``index`` (distinct per stencil, as FV3's namelist-dependent ones are)."""
    c = constants(index)
    values = {"EDGE_W": c["e"], "LIM": c["k"], "DAMP_FRACTION": c["a"]}
    return {name: values[name] for name in family.externals}
