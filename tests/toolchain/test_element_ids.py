"""DaCe's element ids inside :func:`seeded_element_ids`: version-4 UUID text, unique, new in a forked child."""

from __future__ import annotations

import os
import uuid

import dace
from dace import memlet
from dace.sdfg import graph, sdfg, state

from orchestra.toolchain.element_ids import element_id, recognizes, seeded_element_ids


def test_written_for_the_installed_dace():
    assert recognizes(graph.generate_element_id)


def test_ids_read_as_version_4_uuids_and_do_not_repeat():
    ids = [element_id() for _ in range(20000)]
    assert len(set(ids)) == len(ids)
    for text in ids[:200]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_installed_in_every_module_inside_the_block_only():
    owners = (graph, sdfg, state, memlet)
    before = [owner.generate_element_id for owner in owners]
    with seeded_element_ids():
        assert all(owner.generate_element_id is element_id for owner in owners)
        made = dace.SDFG("ids")
        made.add_array("a", [4], dace.float64)
        st = made.add_state()
        st.add_edge(st.add_read("a"), None, st.add_write("a"), None, dace.Memlet("a[0:4]"))
        guids = [made.guid, st.guid, *[n.guid for n in st.nodes()], *[e.data.guid for e in st.edges()]]
        assert len(set(guids)) == len(guids) and all(uuid.UUID(g).version == 4 for g in guids)
    assert [owner.generate_element_id for owner in owners] == before


def test_a_forked_child_draws_other_ids():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, to the parent
        os.write(write, element_id().encode())
        os._exit(0)
    os.close(write)
    mine = element_id()
    os.waitpid(pid, 0)
    theirs = os.read(read, 64).decode()
    os.close(read)
    assert len(theirs) == 36 and theirs != mine
