"""The node-local copy of a build, without MPI: what is staged, how a copy is checked, refused and removed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from orchestra.cache.manifest import Manifest
from orchestra.distributed.staging import StagingArea, staging_area_from_environment
from orchestra.distributed.staging.copy import StagingError, copy_verified, damage_of, files_to_stage

LIBRARY = "build/libmodel.so"


def fake_entry(folder: Path) -> Manifest:
    """A shared entry with the files a load reads (contents are arbitrary bytes)."""
    contents = {
        LIBRARY: os.urandom(3000),
        "build/libdacestub_model.so": b"stub",
        "signature.sdfgz": b"signature",
        "program.sdfgz": b"program" * 100,
    }
    for name, data in contents.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    (folder / "FOLDER_MODE").write_text("development\n")
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}
    manifest = Manifest.new("ab" * 32, "Model.__call__", {"x": 1}, LIBRARY, 1.0, "test")
    return Manifest(**{**manifest.__dict__, "checksum": digests.pop(LIBRARY), "files": digests})


def test_the_load_set_leaves_out_the_program_when_a_signature_exists(tmp_path):
    manifest = fake_entry(tmp_path)
    assert sorted(files_to_stage(manifest)) == ["build/libdacestub_model.so", LIBRARY, "signature.sdfgz"]
    without_signature = Manifest(**{**manifest.__dict__, "files": {"program.sdfgz": "00"}})
    assert sorted(files_to_stage(without_signature)) == [LIBRARY, "program.sdfgz"]


def test_a_verified_copy_is_intact_and_private(tmp_path):
    shared, staged = tmp_path / "shared", tmp_path / "staged"
    shared.mkdir()
    manifest = fake_entry(shared)
    copy_verified(shared, files_to_stage(manifest), staged, manifest.library)
    (staged / "manifest.json").write_text(manifest.to_json())
    assert damage_of(staged, manifest) is None
    assert (staged / LIBRARY).read_bytes() == (shared / LIBRARY).read_bytes()
    assert (staged / "FOLDER_MODE").read_text().strip() == "development"
    assert not (staged / "program.sdfgz").exists()
    assert (staged / LIBRARY).stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda staged: (staged / LIBRARY).write_bytes(b"other"), f"{LIBRARY} differs"),
        (lambda staged: (staged / "signature.sdfgz").unlink(), "signature.sdfgz missing"),
        (lambda staged: (staged / "manifest.json").write_text("{}"), "manifest.json differs"),
        (lambda staged: (staged / "manifest.json").unlink(), "manifest.json unreadable"),
    ],
)
def test_a_damaged_copy_says_what_is_wrong(tmp_path, damage, reason):
    shared, staged = tmp_path / "shared", tmp_path / "staged"
    shared.mkdir()
    manifest = fake_entry(shared)
    copy_verified(shared, files_to_stage(manifest), staged, manifest.library)
    (staged / "manifest.json").write_text(manifest.to_json())
    damage(staged)
    assert reason in damage_of(staged, manifest)


def test_a_damaged_shared_library_is_refused_while_copying(tmp_path):
    shared, staged = tmp_path / "shared", tmp_path / "staged"
    shared.mkdir()
    manifest = fake_entry(shared)
    with open(shared / LIBRARY, "r+b") as stream:
        stream.truncate(100)
    with pytest.raises(StagingError, match="library checksum mismatch: file corrupted or truncated"):
        copy_verified(shared, files_to_stage(manifest), staged, manifest.library)


def test_the_last_user_removes_the_copy_and_the_area(tmp_path):
    area = StagingArea(tmp_path / "orchestra-test")
    area.prepare()
    key = "cd" * 32
    area.entry_dir(key).mkdir()
    with area.copying(key, timeout_s=5):
        first, second = area.start_using(key), area.start_using(key)
    with area.copying(key, timeout_s=5):
        assert not area.stop_using(key, first)  # the other user still loads it
    assert area.entry_dir(key).is_dir()
    with area.copying(key, timeout_s=5):
        assert area.stop_using(key, second)
    area.remove_copy_lock(key)
    area.remove_if_empty()
    assert not area.root.exists()


def test_the_area_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ORCHESTRA_NODE_LOCAL_DIR", str(tmp_path))
    assert staging_area_from_environment().root == tmp_path / f"orchestra-{os.getuid()}"
    monkeypatch.setenv("ORCHESTRA_NODE_LOCAL_DIR", "none")
    assert staging_area_from_environment() is None
    monkeypatch.delenv("ORCHESTRA_NODE_LOCAL_DIR")
    assert staging_area_from_environment().root.parent in (Path("/dev/shm"), Path(os.environ.get("TMPDIR", "/tmp")))
