"""Several processes on one cache: locks serialize builders, killed builds leave nothing usable."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestra.cache import CacheLockTimeout, fingerprint
from orchestra.cache.locking import file_lock, is_locked, remove_if_free
from orchestra.cache.layout import MARKER_NAME

PROGRAM = "DynamicalCore.__call__"

# A job that builds ``key`` unless it finds it: the pattern the pipeline follows.
BUILDER = """
import os, sys, time
from pathlib import Path
from orchestra.cache import BuildStore, Manifest
root, key, log, ready, go = sys.argv[1:6]
store = BuildStore(root)
Path(ready).write_text("")
while not os.path.exists(go):
    time.sleep(0.005)
with store.lock(key, timeout_s=60):
    found = store.lookup(key, "DynamicalCore.__call__")
    if found.entry is None:
        with open(log, "a") as stream:
            stream.write(f"{os.getpid()}\\n")
        time.sleep(0.5)
        staging = store.staging_dir(key)
        (staging / "build").mkdir()
        (staging / "build" / "lib.so").write_bytes(b"built by %d" % os.getpid())
        manifest = Manifest.new(key, "DynamicalCore.__call__", {"n": 1}, "build/lib.so", 0.5, "0")
        entry = store.publish(staging, manifest)
    else:
        entry = found.entry
print(entry.library_path.read_bytes().decode())
"""

# A builder killed (SIGKILL) at a chosen point of its build or publish.
KILLED_BUILDER = """
import os, signal, sys
from orchestra.cache import BuildStore, Manifest
from orchestra.cache import store as store_module
root, key, where = sys.argv[1:4]

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

store = BuildStore(root)
staging = store.staging_dir(key)
(staging / "build").mkdir()
library = staging / "build" / "lib.so"
library.write_bytes(b"complete library")
if where == "build":
    with open(library, "ab") as stream:
        stream.write(b"half")
        stream.flush()
        die()
if where == "before-marker":
    store_module._write_marker = die
manifest = Manifest.new(key, "DynamicalCore.__call__", {"n": 1}, "build/lib.so", 0.5, "0")
with store.lock(key):
    store.publish(staging, manifest)
"""


def test_concurrent_builders_of_one_key_build_once(store, tmp_path, child_env):
    key = fingerprint({"n": 1})
    log, go = tmp_path / "builds.log", tmp_path / "go"
    jobs = []
    for index in range(4):
        ready = tmp_path / f"ready{index}"
        jobs.append(
            (
                ready,
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        BUILDER,
                        str(store.root),
                        key,
                        str(log),
                        str(ready),
                        str(go),
                    ],
                    env=child_env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    deadline = time.monotonic() + 60
    while not all(ready.exists() for ready, _ in jobs):
        assert time.monotonic() < deadline, "builders did not start"
        assert all(job.poll() is None for _, job in jobs), [job.communicate() for _, job in jobs]
        time.sleep(0.01)
    go.write_text("")
    outputs = []
    for _, job in jobs:
        stdout, stderr = job.communicate(timeout=60)
        assert job.returncode == 0, stderr
        outputs.append(stdout.strip())
    builders = log.read_text().split()
    assert len(builders) == 1
    assert outputs == [f"built by {builders[0]}"] * 4
    assert len(store.entries()) == 1 and store.lookup(key).hit


@pytest.mark.parametrize("where", ["build", "before-marker"])
def test_killed_builder_leaves_nothing_that_looks_complete(store, child_env, where):
    key = fingerprint({"n": 1})
    result = subprocess.run(
        [sys.executable, "-c", KILLED_BUILDER, str(store.root), key, where],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == -signal.SIGKILL, result.stderr
    found = store.lookup(key)
    assert found.entry is None
    assert store.entries() == []
    [left] = store.incomplete()
    assert left.stale
    if where == "before-marker":
        assert found.reason == "entry incomplete (no COMPLETE marker): interrupted build?"
        assert not (left.path / MARKER_NAME).exists()
    else:
        assert found.reason.startswith("no build for key")
        assert "interrupted" in left.reason and "is gone" in left.reason
    assert not store.lock_path(key).exists() or not is_locked(
        store.lock_path(key)
    )  # kernel released it
    [removal] = store.clean()
    assert removal.path == left.path
    assert store.incomplete() == []


def test_rebuild_after_killed_publish_replaces_the_unmarked_entry(store, child_env, make_build):
    inputs = {"n": 1}
    key = fingerprint(inputs)
    subprocess.run(
        [sys.executable, "-c", KILLED_BUILDER, str(store.root), key, "before-marker"],
        env=child_env,
        timeout=60,
    )
    assert not store.lookup(key).hit
    with store.lock(key):
        entry = make_build(inputs, content=b"rebuilt")
    assert store.lookup(key).entry == entry
    assert entry.library_path.read_bytes() == b"rebuilt"


def test_lock_timeout_names_the_lock_file_and_holder(store):
    key = "d" * 64
    with store.lock(key) as path:
        assert path == store.lock_path(key)
        started = time.monotonic()
        with pytest.raises(CacheLockTimeout) as raised:
            with store.lock(key, timeout_s=0.2):
                pass
        assert 0.2 <= time.monotonic() - started < 5
    message = str(raised.value)
    assert str(store.lock_path(key)) in message
    assert "timed out after 0.2 s" in message and "pid " in message
    assert raised.value.lock_path == store.lock_path(key)
    with store.lock(key, timeout_s=0.2):  # free again
        pass


def test_lock_file_may_be_removed_only_when_free(tmp_path):
    path = tmp_path / "locks" / "k.lock"
    with file_lock(path):
        assert is_locked(path)
        assert not remove_if_free(path)
    assert not is_locked(path)
    assert remove_if_free(path)
    assert not path.exists()
    assert not remove_if_free(path)


def test_deleted_lock_file_is_a_fresh_lock(tmp_path, child_env):
    """Deleting a held lock file (as ``clean`` never does) frees the path for a new lock."""
    path = tmp_path / "k.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from orchestra.cache.locking import file_lock\n"
            "with file_lock(Path(sys.argv[1])):\n"
            "    print('locked', flush=True)\n"
            "    time.sleep(1.0)\n",
            str(path),
        ],
        env=child_env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "locked"
    path.unlink()  # removed behind the holder's back: a new file is a new lock
    with file_lock(path, timeout_s=5):
        assert is_locked(path)
    holder.wait(timeout=10)
