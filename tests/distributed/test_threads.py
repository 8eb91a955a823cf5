"""The OpenMP thread plan: a rank's share of its node's cores, unless the user chose (orchestra/distributed/threads.py).

The MPI side (9 ranks on this host, the threads each loaded program would
start) is tested in tests/distributed/test_mpi_build.py.
"""

from __future__ import annotations

import pytest

from orchestra.distributed.threads import CoreShare, core_share, plan_threads, requested_threads


@pytest.mark.parametrize(
    "environ, expected",
    [
        ({}, None),
        ({"OMP_NUM_THREADS": ""}, None),
        ({"OMP_NUM_THREADS": "3"}, 3),
        ({"OMP_NUM_THREADS": " 4 , 2"}, 4),  # nested levels: the outer one
        ({"OMP_NUM_THREADS": "0"}, None),  # not a valid count: OpenMP ignores it too
        ({"OMP_NUM_THREADS": "many"}, None),
        ({"OMP_THREAD_LIMIT": "2"}, 2),
        ({"OMP_NUM_THREADS": "1", "OMP_THREAD_LIMIT": "8"}, 1),
    ],
)
def test_requested_threads_reads_what_openmp_reads(environ, expected):
    assert requested_threads(environ) == expected


def test_unset_threads_become_the_ranks_share_of_the_cores():
    plan = plan_threads(CoreShare(cores=2, sharing=6), {})
    assert plan.threads == 1 and not plan.warning
    assert "6 rank(s) share this node's 2 core(s): each rank's programs run 1 thread(s)" in plan.message
    plan = plan_threads(CoreShare(cores=128, sharing=6), {})
    assert plan.threads == 21


def test_a_rank_alone_on_its_cores_keeps_openmps_default_and_hears_nothing():
    assert plan_threads(CoreShare(cores=16, sharing=1), {}) == plan_threads(CoreShare(cores=1, sharing=4), {})
    assert plan_threads(CoreShare(cores=16, sharing=1), {}).threads is None
    assert plan_threads(CoreShare(cores=16, sharing=1), {}).message is None


def test_a_users_choice_is_obeyed_and_oversubscription_named_with_the_fix():
    fits = plan_threads(CoreShare(cores=8, sharing=4), {"OMP_NUM_THREADS": "2"})
    assert fits.threads is None and fits.message is None
    # one thread per rank is the least there is: too many ranks are not OpenMP's to fix
    assert plan_threads(CoreShare(cores=2, sharing=6), {"OMP_NUM_THREADS": "1"}).message is None
    over = plan_threads(CoreShare(cores=2, sharing=6), {"OMP_NUM_THREADS": "2"})
    assert over.threads is None and over.warning
    assert "12 threads on 2 core(s)" in over.message and "set OMP_NUM_THREADS=1" in over.message


def test_a_single_process_shares_its_cores_with_nobody():
    assert core_share(None, frozenset({0, 1, 2})) == CoreShare(cores=3, sharing=1)
