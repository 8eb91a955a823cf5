"""The periodic/channel example under mpirun: 4 ranks give the 1-rank answer, mass is conserved."""

from __future__ import annotations

import re

import pytest

from orchestra.examples import periodic_channel
from tests.mpi_launcher import REPO_ROOT, run_mpi

EXAMPLE = REPO_ROOT / "orchestra" / "examples" / "periodic_channel.py"

pytestmark = pytest.mark.mpi


def _summary(output: str) -> dict[str, str]:
    lines = {line.split(" ", 1)[0]: line for line in output.splitlines()}
    change = re.search(r"relative change (\S+)\)", lines["mass"])
    assert change is not None, output
    return {"first": output.splitlines()[0], "change": change.group(1), "checksum": lines["checksum"],
            "range": lines["q"]}


@pytest.mark.parametrize("domain,partitioner", [("channel", "ChannelPartitioner"),
                                                ("periodic", "PeriodicTilePartitioner")])
def test_example_on_four_ranks_matches_one_rank(domain, partitioner):
    four = _summary(run_mpi(4, EXAMPLE, "--domain", domain, timeout=60).stdout)
    one = _summary(run_mpi(1, EXAMPLE, "--domain", domain, timeout=60).stdout)
    assert four["first"] == f"{partitioner}(layout=(2, 2)) on 4 ranks: 24 x 12 cells, 40 steps"
    assert one["first"].startswith(f"{partitioner}(layout=(1, 1)) on 1 rank:")
    assert four["checksum"] == one["checksum"] and four["range"] == one["range"]
    assert float(four["change"]) < 1e-13


def test_square_layout():
    assert [periodic_channel.square_layout(n) for n in (1, 2, 4, 6, 9, 7)] == [
        (1, 1), (2, 1), (2, 2), (3, 2), (3, 3), (7, 1)
    ]
