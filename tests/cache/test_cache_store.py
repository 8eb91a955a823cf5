"""The build store: publish and lookup, corruption, interrupted builds, cleaning, requests."""

from __future__ import annotations

import os

import pytest

from orchestra.cache import (
    BuildStore,
    CacheError,
    CacheMiss,
    Manifest,
    default_cache_root,
    fingerprint,
)
from orchestra.cache.layout import (
    LOCKS_NAME,
    MANIFEST_NAME,
    MARKER_NAME,
    OBJECTS_NAME,
    STAGING_NAME,
    host_slug,
    program_slug,
)
from orchestra.cache.requests import Asked
from orchestra.cache.store import OBJECT_REMOVAL

PROGRAM = "DynamicalCore.__call__"


def test_publish_then_lookup_roundtrip(store, make_build, example_inputs):
    entry = make_build()
    key = fingerprint(example_inputs())
    assert entry.key == key
    assert entry.path == store.root / PROGRAM / key[:20]
    assert entry.library_path.read_bytes().startswith(b"\x7fELF")
    assert (entry.path / MARKER_NAME).is_file() and (entry.path / "program.sdfgz").is_file()
    assert Manifest.read(entry.path / MANIFEST_NAME) == entry.manifest
    assert len(entry.manifest.checksum) == 64
    assert list((store.root / STAGING_NAME).iterdir()) == []

    found = store.lookup(key)
    assert found.hit and found.reason == "hit"
    assert found.entry == entry
    assert store.lookup(key, PROGRAM).entry == entry
    assert store.require(PROGRAM, key, example_inputs()) == entry


def test_lookup_of_unknown_key(store):
    found = store.lookup("0" * 64)
    assert not found.hit
    assert found.reason == "no build for key 000000000000"


def test_truncated_library_is_a_miss(store, make_build):
    entry = make_build()
    assert store.lookup(entry.key).hit  # verified once in this process
    data = entry.library_path.read_bytes()
    entry.library_path.write_bytes(data[: len(data) // 2])
    found = store.lookup(entry.key)
    assert found.entry is None
    assert found.reason == "library checksum mismatch: file corrupted or truncated"


def test_corrupted_library_of_same_size_is_a_miss(store, make_build):
    entry = make_build()
    data = bytearray(entry.library_path.read_bytes())
    data[100] ^= 0xFF
    entry.library_path.write_bytes(bytes(data))
    assert (
        store.lookup(entry.key).reason == "library checksum mismatch: file corrupted or truncated"
    )


def test_missing_library_or_manifest_is_a_miss(store, make_build, example_inputs):
    entry = make_build()
    entry.library_path.unlink()
    assert store.lookup(entry.key).reason == "library missing: build/libprogram.so"
    other = make_build(example_inputs(backend="dace:gpu"))
    (other.path / MANIFEST_NAME).write_text('{"key": "trunc')
    assert store.lookup(other.key).reason.startswith(
        "manifest unreadable: manifest is not valid JSON"
    )


def test_entry_without_marker_is_not_complete(store, make_build):
    entry = make_build()
    (entry.path / MARKER_NAME).unlink()
    found = store.lookup(entry.key)
    assert found.entry is None
    assert found.reason == "entry incomplete (no COMPLETE marker): interrupted build?"
    assert store.entries() == []
    [folder] = store.incomplete()
    assert folder.path == entry.path and folder.stale


def test_leftover_staging_folder_is_never_an_entry(store, example_inputs):
    key = fingerprint(example_inputs())
    staging = store.staging_dir(key)
    (staging / "build").mkdir()
    (staging / "build" / "libprogram.so").write_bytes(b"half a libr")
    (staging / MANIFEST_NAME).write_text("{}")
    assert store.lookup(key).reason.startswith("no build for key")
    assert store.entries() == []
    [folder] = store.incomplete()
    assert folder.path == staging
    assert not folder.stale  # this process is alive: a build in progress
    assert store.clean() == [] and staging.is_dir()


def test_publish_never_overwrites_a_complete_entry(store, make_build):
    first = make_build(content=b"first build " * 100)
    second = make_build(content=b"second build " * 100)
    assert second == first
    assert first.library_path.read_bytes() == b"first build " * 100
    assert list((store.root / STAGING_NAME).iterdir()) == []
    assert len(store.entries()) == 1


def test_publish_replaces_an_incomplete_or_corrupt_entry(store, make_build):
    first = make_build(content=b"first build " * 100)
    first.library_path.write_bytes(b"truncated")
    second = make_build(content=b"second build " * 100)
    assert store.lookup(second.key).hit
    assert second.library_path.read_bytes() == b"second build " * 100
    (second.path / MARKER_NAME).unlink()
    third = make_build(content=b"third build " * 100)
    assert store.lookup(third.key).entry.library_path.read_bytes() == b"third build " * 100


def test_publish_checks_the_library(store, example_inputs):
    key = fingerprint(example_inputs())
    staging = store.staging_dir(key)
    manifest = Manifest.new(key, PROGRAM, example_inputs(), "build/lib.so", 1.0, "0.1.0")
    with pytest.raises(CacheError, match="'build/lib.so' is not there"):
        store.publish(staging, manifest)
    (staging / "build").mkdir()
    (staging / "build" / "lib.so").write_bytes(b"library")
    with pytest.raises(CacheError, match="does not match the manifest's checksum"):
        store.publish(staging, manifest.with_checksum("0" * 64))
    with pytest.raises(CacheError, match="must be relative"):
        store.publish(staging, Manifest.new(key, PROGRAM, {}, "../lib.so", 1.0, "0"))
    assert store.publish(staging, manifest).library_path.read_bytes() == b"library"


def test_invalid_keys_are_refused(store):
    with pytest.raises(ValueError, match="invalid cache key"):
        store.lookup("not-a-key")
    with pytest.raises(ValueError, match="invalid cache key"):
        store.staging_dir("abc")


def test_entries_by_program(store, make_build, example_inputs):
    a = make_build(program="A.__call__")
    b = make_build(example_inputs(backend="dace:gpu"), program="B.__call__")
    assert store.entries() == [a, b]
    assert store.entries("B.__call__") == [b]
    assert store.entries("C") == []


def test_remove(store, make_build, tmp_path):
    entry = make_build()
    store.remove(entry)
    assert not entry.path.exists()
    assert not store.lookup(entry.key).hit
    assert list((store.root / STAGING_NAME).iterdir()) == []
    with pytest.raises(CacheError, match="not inside the cache root"):
        store.remove(tmp_path)


def test_clean_removes_stale_folders_only(store, make_build, example_inputs):
    complete = make_build()
    unmarked = make_build(example_inputs(backend="dace:gpu"))
    (unmarked.path / MARKER_NAME).unlink()
    corrupt = make_build(example_inputs(backend="gtc:numpy"))
    corrupt.library_path.write_bytes(b"x")
    dead = store.root / STAGING_NAME / f"{'a' * 20}--{host_slug()}--999999999--xyz"
    dead.mkdir()
    live = store.staging_dir("b" * 64)

    dry = store.clean(dry_run=True)
    assert {removal.path for removal in dry} == {unmarked.path, corrupt.path, dead}
    assert unmarked.path.exists() and dead.exists()

    removed = store.clean()
    assert {removal.path for removal in removed} == {unmarked.path, corrupt.path, dead}
    assert all(removal.reason.startswith("stale: ") for removal in removed)
    assert store.lookup(complete.key).hit
    assert live.is_dir()
    assert [folder.path for folder in store.incomplete()] == [live]


def test_clean_all_and_older_than(store, make_build, example_inputs):
    entry = make_build()
    assert store.clean(older_than_days=1, stale_only=False) == []
    assert store.lookup(entry.key).hit
    [removal] = store.clean(stale_only=False)
    assert removal.path == entry.path and removal.reason == f"build of {PROGRAM}"
    assert removal.size_bytes > 0
    assert store.entries() == []


def test_clean_leaves_kept_objects_unless_asked_for_old_or_all(store):
    objects = store.root / OBJECTS_NAME / "ab"
    objects.mkdir(parents=True)
    old = objects / ("ab" + "1" * 62 + ".0123456789abcdef.o")
    recent = objects / ("ab" + "2" * 62 + ".fedcba9876543210.o")
    old.write_bytes(b"old object")
    recent.write_bytes(b"recent")
    os.utime(old, (0, 0))
    assert store.clean() == []
    [removal] = store.clean(older_than_days=1, stale_only=False)
    assert removal.path == old and removal.size_bytes == len(b"old object") and not old.exists()
    assert removal.reason == OBJECT_REMOVAL
    [removal] = store.clean(stale_only=False)
    assert removal.path == recent and not recent.exists()


def test_clean_removes_free_lock_files(store, make_build):
    entry = make_build()
    with store.lock(entry.key):
        pass
    assert store.lock_path(entry.key).exists()
    store.clean()
    assert not store.lock_path(entry.key).exists()
    assert store.lookup(entry.key).hit


def test_record_and_read_requests(store, example_inputs):
    inputs = example_inputs()
    key = fingerprint(inputs)
    path = store.record_requests(PROGRAM, [Asked(key, inputs)])
    assert path == store.root / PROGRAM / "last_request.json"
    (request,) = store.last_requests(PROGRAM)
    assert request.key == key and request.program == PROGRAM
    assert fingerprint(request.inputs) == key
    store.record_requests(PROGRAM, [Asked(key, example_inputs(backend="dace:gpu"))])
    (request,) = store.last_requests(PROGRAM)
    assert request.inputs["backend"] == "dace:gpu"
    assert [p.name for p in path.parent.iterdir()] == ["last_request.json"]  # no temporary left
    assert store.requests() == store.last_requests(PROGRAM)
    assert store.last_requests("Other") == []


def test_corrupt_request_record_is_skipped_by_requests_and_refused_by_last_requests(store, example_inputs):
    from orchestra.cache.errors import CorruptEntry

    path = store.record_requests(PROGRAM, [Asked(fingerprint(example_inputs()), example_inputs())])
    path.write_text('{"requests": [{"program": 1}]}')
    assert store.requests() == []
    with pytest.raises(CorruptEntry, match="request record unreadable"):
        store.last_requests(PROGRAM)


def test_closest_and_miss(store, make_build, example_inputs):
    make_build(example_inputs(per_rank_domain=(24, 24, 1), debug_checks=True))
    near = make_build(example_inputs(per_rank_domain=(24, 24, 1)))
    wanted = example_inputs(per_rank_domain=(48, 48, 1))
    ranked = store.closest(PROGRAM, wanted)
    assert [len(lines) for _, lines in ranked] == [1, 2]
    assert ranked[0] == (near, ["per_rank_domain: (48, 48, 1) vs (24, 24, 1)"])

    key = fingerprint(wanted)
    with pytest.raises(CacheMiss) as raised:
        store.require(PROGRAM, key, wanted)
    miss = raised.value
    assert miss.reason == f"no build for key {key[:12]}"
    assert miss.differences == ["per_rank_domain: (48, 48, 1) vs (24, 24, 1)"]
    assert miss.closest_key == near.key
    assert "per_rank_domain: (48, 48, 1) vs (24, 24, 1)" in str(miss)
    assert store.miss("Other", key, wanted).differences == []


def test_default_cache_root(monkeypatch, tmp_path):
    monkeypatch.setenv("ORCHESTRA_CACHE_DIR", str(tmp_path / "shared"))
    assert default_cache_root() == tmp_path / "shared"
    assert BuildStore().root == tmp_path / "shared"
    monkeypatch.delenv("ORCHESTRA_CACHE_DIR")
    monkeypatch.chdir(tmp_path)
    assert default_cache_root() == tmp_path / ".orchestra_cache"


def test_reading_creates_nothing(tmp_path):
    store = BuildStore(tmp_path / "absent")
    assert store.entries() == [] and store.incomplete() == [] and store.requests() == []
    assert not store.lookup("a" * 64).hit
    assert store.clean() == []
    assert not (tmp_path / "absent").exists()


@pytest.mark.parametrize(
    "program, slug",
    [
        ("DynamicalCore.__call__", "DynamicalCore.__call__"),
        ("driver.step", "driver.step"),
        ("a/b c", "a_b_c-"),
        (".staging", "staging-"),
        ("", "program-"),
    ],
)
def test_program_slug(program, slug):
    made = program_slug(program)
    assert made.startswith(slug)
    assert "/" not in made and not made.startswith(".")
    assert made == program or len(made) == len(slug) + 8


def test_lock_folder_layout(store):
    assert store.lock_path("c" * 64) == store.root / LOCKS_NAME / f"{'c' * 20}.lock"
