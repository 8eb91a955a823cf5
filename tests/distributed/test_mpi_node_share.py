"""The default number of a builder's lowering processes counts ranks and builders per node, under mpirun.

Nodes are pretend nodes of 2 consecutive ranks (``ORCHESTRA_RANKS_PER_NODE=2``);
:func:`orchestra.pipeline.lowering_processes.node_share` must find them without
communicating beyond the node split itself.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).with_name("mpi_node_share_worker.py")

pytestmark = pytest.mark.mpi


def shares(monkeypatch, builders: list[int]) -> dict[int, tuple[int, int]]:
    monkeypatch.setenv("ORCHESTRA_RANKS_PER_NODE", "2")
    process = run_mpi(4, WORKER, *map(str, builders), timeout=120)
    found = re.findall(r"rank=(\d+) ranks_on_node=(\d+) builders_on_node=(\d+)", process.stdout)
    return {int(rank): (int(ranks), int(on_node)) for rank, ranks, on_node in found}


@pytest.mark.parametrize(
    "builders, expected",
    [
        ([0, 3], {0: (2, 1), 1: (2, 1), 2: (2, 1), 3: (2, 1)}),  # one builder on each node
        ([0, 1], {0: (2, 2), 1: (2, 2), 2: (2, 0), 3: (2, 0)}),  # both on the first node
    ],
)
def test_ranks_and_builders_are_counted_per_node(monkeypatch, builders, expected):
    assert shares(monkeypatch, builders) == expected
