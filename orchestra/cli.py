"""The ``orchestra`` command: inspect the toolchain and the build cache.

::

    orchestra info                          versions and the cache root
    orchestra cache list [--root R]         complete builds, one line each
    orchestra cache show KEY_PREFIX         one build's manifest
    orchestra cache explain [PROGRAM]       would the last run of PROGRAM hit (each code path)? if not, why
    orchestra cache clean [--all] [--older-than DAYS] [--dry-run]
    orchestra replay DIR [--repeat N] [--check] [--root R]
                                            run one recorded call standalone (ORCHESTRA_RECORD)

Errors print one line (``orchestra: error: ...``) and exit with status 2.
Nothing here imports DaCe or gt4py, except ``replay`` (inside its handler).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from typing import Callable, Sequence, TextIO

from orchestra.cache.entry import BuildEntry
from orchestra.cache.errors import CacheError
from orchestra.cache.layout import ENV_VAR
from orchestra.cache.manifest import describe_inputs
from orchestra.cache.requests import Request
from orchestra.cache.store import OBJECT_REMOVAL, BuildStore
from orchestra.cache.versions import toolchain_versions

_EXIT_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    parser = _parser()
    arguments = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace, TextIO], int] | None = getattr(
        arguments, "handler", None
    )
    if handler is None:
        getattr(arguments, "help_parser", parser).print_help(sys.stderr)
        return _EXIT_ERROR
    try:
        return handler(arguments, sys.stdout)
    except BrokenPipeError:  # `orchestra cache show | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit must not fail again
        return 0
    except (CacheError, OSError, ValueError) as error:
        print(f"orchestra: error: {error}", file=sys.stderr)
        return _EXIT_ERROR


def _parser() -> argparse.ArgumentParser:
    root_option = argparse.ArgumentParser(add_help=False)
    root_option.add_argument(
        "--root", help=f"cache root (default: ${ENV_VAR}, else ./.orchestra_cache)"
    )
    parser = argparse.ArgumentParser(
        prog="orchestra", description="Inspect the orchestra toolchain and its build cache."
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    info = commands.add_parser("info", parents=[root_option], help="versions and cache root")
    info.set_defaults(handler=_info)

    cache = commands.add_parser("cache", help="inspect and clean the build cache")
    cache.set_defaults(help_parser=cache)
    cache_commands = cache.add_subparsers(title="cache commands", metavar="COMMAND")
    listing = cache_commands.add_parser("list", parents=[root_option], help="list complete builds")
    listing.add_argument("--program", help="only builds of this program")
    listing.set_defaults(handler=_list)
    show = cache_commands.add_parser("show", parents=[root_option], help="print a build's manifest")
    show.add_argument("key_prefix", metavar="KEY_PREFIX")
    show.add_argument("--json", action="store_true", help="print the inputs in full, as JSON")
    show.set_defaults(handler=_show)
    explain = cache_commands.add_parser(
        "explain", parents=[root_option], help="why the last run of a program would miss"
    )
    explain.add_argument("program", nargs="?", metavar="PROGRAM")
    explain.set_defaults(handler=_explain)
    clean = cache_commands.add_parser(
        "clean", parents=[root_option], help="remove stale folders (and, if asked, builds)"
    )
    clean.add_argument("--all", action="store_true", help="remove complete builds too")
    clean.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="remove only what is older (builds included)",
    )
    clean.add_argument("--dry-run", action="store_true", help="print what would be removed")
    clean.set_defaults(handler=_clean)
    replay = commands.add_parser(
        "replay", parents=[root_option], help="run one recorded call standalone (ORCHESTRA_RECORD)"
    )
    replay.add_argument("folder", metavar="DIR", help="a recording: RECORD_DIR/<program>[/rank<R>]")
    replay.add_argument("--repeat", type=int, default=1, metavar="N", help="calls to time (default 1)")
    replay.add_argument(
        "--check", action="store_true", help="compare every array with the recording (exit 1 if any differs)"
    )
    replay.set_defaults(handler=_replay)
    return parser


def _store(arguments: argparse.Namespace) -> BuildStore:
    return BuildStore(arguments.root)


def _info(arguments: argparse.Namespace, out: TextIO) -> int:
    rows = [(name, version) for name, version in toolchain_versions().items()]
    rows.append(("python", platform.python_version()))
    if arguments.root:
        source = "--root"
    elif os.environ.get(ENV_VAR):
        source = f"${ENV_VAR}"
    else:
        source = "default"
    rows.append(("cache root", f"{_store(arguments).root} ({source})"))
    _print_fields(rows, out)
    return 0


def _list(arguments: argparse.Namespace, out: TextIO) -> int:
    store = _store(arguments)
    entries = store.entries(arguments.program)
    if entries:
        rows = [
            (
                entry.program,
                entry.key[:12],
                entry.manifest.created,
                entry.manifest.host,
                build_variant(entry.manifest.inputs),
                _size(entry.size_bytes()),
                f"{entry.manifest.build_seconds:.1f}",
            )
            for entry in entries
        ]
        _print_table(["program", "key", "created", "host", "variant", "size", "build s"], rows, out)
    else:
        print(f"no builds in {store.root}", file=out)
    unusable = store.incomplete(verify=False)
    stale = sum(folder.stale for folder in unusable)
    if stale:
        print(f"{stale} stale folder(s): `orchestra cache clean` removes them", file=out)
    if len(unusable) > stale:
        print(f"{len(unusable) - stale} build(s) in progress", file=out)
    return 0


def build_variant(inputs: dict) -> str:
    """What kind of build an entry is: ``normal``, or its debug checks, kernel profile, GPU.

    (A split build's parts are programs of their components: the program column names them.)

    >>> build_variant({"pipeline": {"debug_checks": {"nan": {"include": ["*"]}}, "kernel_timers": True}})
    'debug(nan)+profile'
    """
    pipeline = inputs.get("pipeline") or {}
    parts = []
    checks = pipeline.get("debug_checks")
    if checks:
        names = sorted(checks) if isinstance(checks, dict) else []
        parts.append(f"debug({','.join(name for name in names if checks[name])})" if names else "debug")
    if pipeline.get("kernel_timers"):
        parts.append("profile")
    if pipeline.get("on_gpu"):
        parts.append("gpu")
    return "+".join(parts) or "normal"


def _show(arguments: argparse.Namespace, out: TextIO) -> int:
    store = _store(arguments)
    prefix = arguments.key_prefix.lower()
    matches = [entry for entry in store.entries() if entry.key.startswith(prefix)]
    if not matches:
        raise CacheError(
            f"no build with a key starting {prefix!r} in {store.root} (see `orchestra cache list`)"
        )
    if len(matches) > 1:
        keys = ", ".join(entry.key[:12] for entry in matches)
        raise CacheError(
            f"key prefix {prefix!r} is ambiguous: it matches {len(matches)} builds ({keys})"
        )
    entry = matches[0]
    status = store.lookup(entry.key, entry.program)
    manifest = entry.manifest
    rows = [
        ("program", manifest.program),
        ("key", manifest.key),
        ("folder", str(entry.path)),
        ("library", f"{manifest.library} (sha256 {manifest.checksum[:16]}...)"),
        ("status", "usable" if status.hit else f"unusable: {status.reason}"),
        ("created", f"{manifest.created} on {manifest.host}"),
        ("build time", f"{manifest.build_seconds:.1f} s" + "".join(
            f", {stage} {seconds:.1f} s" for stage, seconds in manifest.stage_seconds.items()
        )),
        ("orchestra", manifest.orchestra_version),
        ("size", _size(entry.size_bytes())),
    ]
    _print_fields(rows, out)
    if arguments.json:
        print(json.dumps(manifest.inputs, indent=2, sort_keys=True), file=out)
        return 0
    print("inputs:", file=out)
    for line in describe_inputs(manifest.inputs):
        print(f"  {line}", file=out)
    return 0


def _explain(arguments: argparse.Namespace, out: TextIO) -> int:
    store = _store(arguments)
    requests = store.requests()
    if arguments.program is not None:
        selected = [request for request in requests if request.program == arguments.program]
        if not selected:
            known = ", ".join(request.program for request in requests) or "none"
            raise CacheError(
                f"no run of {arguments.program!r} recorded in {store.root} (recorded: {known})"
            )
        requests = selected
    if not requests:
        print(f"no runs recorded in {store.root}: a run records the inputs it asks for", file=out)
        return 0
    for request in requests:
        _explain_one(store, request, out)
    return 0


def _explain_one(store: BuildStore, request: Request, out: TextIO) -> None:
    whom = f" [{request.code_path}, {_ranks(request.ranks)}]" if request.code_path else ""
    print(
        f"{request.program}{whom}: last run on {request.host} at {request.requested} "
        f"asked for key {request.key[:12]}",
        file=out,
    )
    found = store.lookup(request.key, request.program)
    if found.entry is not None:
        print(f"  hit: build {_describe(found.entry)}", file=out)
        return
    print(f"  miss: {found.reason}", file=out)
    others = [
        pair
        for pair in store.closest(request.program, request.inputs)
        if pair[0].key != request.key
    ]
    if not others:
        print("  no other build of this program", file=out)
        return
    entry, differences = others[0]
    count = len(differences)
    print(
        f"  closest build {_describe(entry)} differs in {count} input{'' if count == 1 else 's'} "
        "(this run vs the build):",
        file=out,
    )
    for line in differences:
        print(f"    {line}", file=out)
    if len(others) > 1:
        print(f"  {len(others) - 1} other build(s) differ more", file=out)


def _ranks(ranks: Sequence[int], shown: int = 6) -> str:
    """``rank 4`` / ``ranks 0, 2`` / ``ranks 0, 1, ... (+10 more)``."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    listed = ", ".join(map(str, ranks[:shown]))
    return f"ranks {listed}" + (f" (+{len(ranks) - shown} more)" if len(ranks) > shown else "")


def _describe(entry: BuildEntry) -> str:
    return f"{entry.key[:12]} (created {entry.manifest.created} on {entry.manifest.host})"


def _clean(arguments: argparse.Namespace, out: TextIO) -> int:
    if arguments.older_than is not None and not 0 <= arguments.older_than < float("inf"):
        raise ValueError(
            f"--older-than must be a number of days >= 0, not {arguments.older_than:g}"
        )
    store = _store(arguments)
    if not store.root.is_dir():
        raise ValueError(f"no cache at {store.root}: nothing to clean (check --root or ${ENV_VAR})")
    stale_only = not (arguments.all or arguments.older_than is not None)
    removals = store.clean(arguments.older_than, stale_only=stale_only, dry_run=arguments.dry_run)
    verb = "would remove" if arguments.dry_run else "removed"
    for removal in removals:
        print(f"{verb} {removal.path} ({removal.reason}, {_size(removal.size_bytes)})", file=out)
    total = sum(removal.size_bytes for removal in removals)
    objects = sum(removal.reason == OBJECT_REMOVAL for removal in removals)
    kept = f" and {objects} compiled object(s)" if objects else ""
    print(f"{verb} {len(removals) - objects} folder(s){kept}, {_size(total)}", file=out)
    return 0


def _replay(arguments: argparse.Namespace, out: TextIO) -> int:
    from orchestra.errors import BuildError
    from orchestra.observe.replay.replay import replay

    try:
        return replay(arguments.folder, arguments.repeat, arguments.check, arguments.root, out)
    except BuildError as error:
        message = " ".join(str(error).split())
        raise ValueError(f"{message}; rebuild it (run the model with FV3_DACEMODE=BuildAndRun) and record again") from error


def _print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(columns, *rows)]
    for row in [columns, *rows]:
        print(
            "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip(), file=out
        )


def _print_fields(rows: Sequence[tuple[str, str]], out: TextIO) -> None:
    width = max(len(name) for name, _ in rows) + 1
    for name, value in rows:
        print(f"{name + ':':<{width}} {value}", file=out)


def _size(size_bytes: int) -> str:
    value = float(size_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


if __name__ == "__main__":
    sys.exit(main())
