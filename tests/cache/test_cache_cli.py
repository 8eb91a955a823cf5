"""The ``orchestra`` command: info, cache list/show/explain/clean."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orchestra.cache import fingerprint
from orchestra.cache.layout import MARKER_NAME
from orchestra.cache.requests import Asked
from orchestra.cli import main

PROGRAM = "DynamicalCore.__call__"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_info(capsys, store):
    status, out, _ = run(capsys, "info", "--root", str(store.root))
    assert status == 0
    for name in ("orchestra:", "dace:", "gt4py:", "python:"):
        assert name in out
    assert f"cache root: {store.root} (--root)" in out


def test_info_reads_the_environment(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ORCHESTRA_CACHE_DIR", str(tmp_path / "env-cache"))
    _, out, _ = run(capsys, "info")
    assert f"{tmp_path / 'env-cache'} ($ORCHESTRA_CACHE_DIR)" in out


def test_list(capsys, store, make_build, example_inputs):
    status, out, _ = run(capsys, "cache", "list", "--root", str(store.root))
    assert status == 0 and out.strip() == f"no builds in {store.root}"
    entry = make_build()
    other = make_build(example_inputs(backend="dace:gpu"), program="Other.__call__")
    (other.path / MARKER_NAME).unlink()
    status, out, _ = run(capsys, "cache", "list", "--root", str(store.root))
    lines = out.splitlines()
    assert lines[0].split() == ["program", "key", "created", "host", "variant", "size", "build", "s"]
    assert lines[1].split()[:2] == [PROGRAM, entry.key[:12]]
    assert "1.5" in lines[1] and "KiB" in lines[1]
    assert "1 stale folder(s): `orchestra cache clean` removes them" in out


def test_show(capsys, store, make_build):
    entry = make_build()
    status, out, _ = run(capsys, "cache", "show", entry.key[:6], "--root", str(store.root))
    assert status == 0
    assert f"key:        {entry.key}" in out
    assert "status:     usable" in out
    assert "  per_rank_domain: (24, 24, 4)\n" in out
    assert "  source['Acoustics.__call__']: <str of " in out
    _, out, _ = run(capsys, "cache", "show", entry.key[:6], "--json", "--root", str(store.root))
    assert '"per_rank_domain": [' in out
    entry.library_path.write_bytes(b"x")
    _, out, _ = run(capsys, "cache", "show", entry.key[:6], "--root", str(store.root))
    assert "status:     unusable: library checksum mismatch" in out


def test_show_errors_exit_2_with_one_line(capsys, store, make_build, example_inputs):
    status, out, err = run(capsys, "cache", "show", "abc", "--root", str(store.root))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(
        "orchestra: error: no build with a key starting 'abc'"
    )
    keys = [make_build(example_inputs(n=n)).key for n in range(40)]
    prefix = next(k[0] for k in keys if sum(other[0] == k[0] for other in keys) > 1)
    status, _, err = run(capsys, "cache", "show", prefix, "--root", str(store.root))
    assert status == 2 and "is ambiguous" in err


def test_explain_hit_and_miss(capsys, store, make_build, example_inputs):
    status, out, _ = run(capsys, "cache", "explain", "--root", str(store.root))
    assert status == 0 and "no runs recorded" in out

    built = make_build(example_inputs(per_rank_domain=(24, 24, 1)))
    store.record_requests(PROGRAM, [Asked(built.key, example_inputs(per_rank_domain=(24, 24, 1)))])
    _, out, _ = run(capsys, "cache", "explain", "--root", str(store.root))
    assert f"  hit: build {built.key[:12]}" in out

    wanted = example_inputs(per_rank_domain=(48, 48, 1), debug_checks=True)
    store.record_requests(PROGRAM, [Asked(fingerprint(wanted), wanted)])
    status, out, _ = run(capsys, "cache", "explain", PROGRAM, "--root", str(store.root))
    assert status == 0
    assert f"  miss: no build for key {fingerprint(wanted)[:12]}" in out
    assert f"closest build {built.key[:12]}" in out and "differs in 2 inputs" in out
    assert (
        "    debug_checks: True vs False\n    per_rank_domain: (48, 48, 1) vs (24, 24, 1)\n" in out
    )


def test_explain_reports_every_code_path_of_the_last_run(capsys, store, make_build, example_inputs):
    corner = example_inputs(per_rank_domain=(24, 24, 1), scalars={"edge": "bottom-left"})
    interior = example_inputs(per_rank_domain=(24, 24, 1), scalars={"edge": "interior"})
    built = make_build(corner)
    store.record_requests(
        PROGRAM,
        [
            Asked(fingerprint(corner), corner, "bottom-left", [0]),
            Asked(fingerprint(interior), interior, "interior", list(range(4, 14))),
        ],
    )
    status, out, _ = run(capsys, "cache", "explain", "--root", str(store.root))
    assert status == 0
    corner_line, interior_line = (line for line in out.splitlines() if line.startswith(PROGRAM))
    assert "[bottom-left, rank 0]" in corner_line
    assert "[interior, ranks 4, 5, 6, 7, 8, 9 (+4 more)]" in interior_line
    assert f"  hit: build {built.key[:12]}" in out
    assert f"  miss: no build for key {fingerprint(interior)[:12]}" in out
    assert "differs in 1 input (this run vs the build):\n    scalars.edge: 'interior' vs 'bottom-left'\n" in out
    # the next run (one process) replaces both records
    store.record_requests(PROGRAM, [Asked(built.key, corner)])
    _, out, _ = run(capsys, "cache", "explain", "--root", str(store.root))
    assert out.count(PROGRAM) == 1 and "interior" not in out


def test_explain_unknown_program(capsys, store):
    status, _, err = run(capsys, "cache", "explain", "Nope", "--root", str(store.root))
    assert status == 2 and "no run of 'Nope' recorded" in err


def test_clean(capsys, store, make_build, example_inputs):
    kept = make_build()
    stale = make_build(example_inputs(backend="dace:gpu"))
    (stale.path / MARKER_NAME).unlink()
    status, out, _ = run(capsys, "cache", "clean", "--dry-run", "--root", str(store.root))
    assert status == 0 and f"would remove {stale.path} (stale: entry incomplete" in out
    assert stale.path.exists()
    _, out, _ = run(capsys, "cache", "clean", "--root", str(store.root))
    assert "removed 1 folder(s)" in out and not stale.path.exists() and kept.path.exists()
    _, out, _ = run(capsys, "cache", "clean", "--older-than", "1", "--root", str(store.root))
    assert "removed 0 folder(s)" in out and kept.path.exists()
    _, out, _ = run(capsys, "cache", "clean", "--all", "--root", str(store.root))
    assert "removed 1 folder(s)" in out and not kept.path.exists()


def test_usage_errors_exit_2(capsys):
    assert main(["cache"]) == 2
    assert "usage: orchestra cache" in capsys.readouterr().err
    with pytest.raises(SystemExit) as raised:
        main(["cache", "frobnicate"])
    assert raised.value.code == 2


def test_module_entry_point_does_not_import_dace(child_env, store):
    code = (
        "import sys, runpy\n"
        "sys.argv = ['orchestra', 'info', '--root', sys.argv[1]]\n"
        "try:\n"
        "    runpy.run_module('orchestra.cli', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "assert not {'dace', 'gt4py'} & set(sys.modules), 'imported the toolchain'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(store.root)],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "cache root:" in result.stdout


def test_clean_of_a_missing_cache_is_an_error(capsys, tmp_path):
    status, _, err = run(capsys, "cache", "clean", "--root", str(tmp_path / "does" / "not" / "exist"))
    assert status != 0 and "no cache at" in err and err.count("\n") == 1


def test_output_into_a_closed_pipe_ends_quietly(make_build, store):
    """`orchestra cache show KEY | head -1`: the reader stops early; no Broken pipe traceback, status 0."""
    entry = make_build()
    reader = subprocess.Popen(["head", "-c", "10"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    writer = subprocess.run([sys.executable, "-m", "orchestra.cli", "cache", "show", entry.key[:12], "--root",
                             str(store.root)], stdout=reader.stdin, stderr=subprocess.PIPE, text=True, timeout=120)
    reader.stdin.close()
    reader.wait(timeout=60)
    assert writer.returncode == 0 and "Broken pipe" not in writer.stderr and "Traceback" not in writer.stderr, \
        writer.stderr


def test_the_list_says_which_builds_carry_debug_checks_or_a_profile():
    from orchestra.cli import build_variant

    assert build_variant({"pipeline": {"debug_checks": {}, "kernel_timers": False}}) == "normal"
    assert build_variant({"pipeline": {"debug_checks": {"negative": {"fields": ["h"]}}}}) == "debug(negative)"
    assert build_variant({"pipeline": {"kernel_timers": True, "on_gpu": True}}) == "profile+gpu"
