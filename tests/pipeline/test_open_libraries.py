"""Which path a load opens: the build's library, or a private copy while a live program holds that one open."""

from __future__ import annotations

import gc
from pathlib import Path

from orchestra.pipeline.open_libraries import library_to_open, opened


class Program:
    """Stands for DaCe's CompiledSDFG: all the registry needs is an object it can refer to weakly."""


def build_folder(tmp_path: Path) -> Path:
    build = tmp_path / "entry" / "build"
    build.mkdir(parents=True)
    (build / "libmodel.so").write_bytes(b"library")
    (build / "libdacestub_model.so").write_bytes(b"stub")
    (build / "libmodel.so_0").write_bytes(b"left by an older DaCe")
    return build / "libmodel.so"


def test_a_library_no_live_program_holds_is_opened_in_place(tmp_path):
    library = build_folder(tmp_path)
    assert library_to_open(library) == library.resolve()


def test_a_held_library_is_opened_from_a_private_copy_until_its_holder_is_gone(tmp_path):
    library = build_folder(tmp_path)
    first = Program()
    opened(library, first)
    copy = library_to_open(library)
    assert copy != library.resolve() and tmp_path not in copy.parents
    assert copy.read_bytes() == b"library" and (copy.parent / "libdacestub_model.so").read_bytes() == b"stub"
    assert sorted(path.name for path in copy.parent.iterdir()) == ["libdacestub_model.so", "libmodel.so"]
    assert sorted(path.name for path in library.parent.iterdir()) == [
        "libdacestub_model.so", "libmodel.so", "libmodel.so_0"
    ]  # nothing written beside the build's library

    second = Program()
    opened(copy, second)  # the copy's holder does not hold the build's library
    another = library_to_open(library)
    assert another not in (copy, library.resolve())  # the first program still holds the library

    del first
    gc.collect()
    assert library_to_open(library) == library.resolve()  # its holder collected: the path is free again
    assert library_to_open(copy) != copy  # the second program still holds the copy
