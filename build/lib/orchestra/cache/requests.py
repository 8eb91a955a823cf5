"""Request records: the inputs the last run of a program asked for.

A run records its requests before looking up its builds, so that
``orchestra cache explain`` can later compare what was asked for with what
is available: one request per distinct build key of the run (one per
code-path class of a distributed run, with the ranks that share it), all in
one file that the next run replaces atomically. A reader sees the previous
run's requests or the new ones, never a mix, and never requests of an
older run with another layout.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import socket
from pathlib import Path
from typing import Any, Mapping, Sequence

from orchestra.cache import durable
from orchestra.cache.errors import CorruptEntry
from orchestra.cache.fingerprint import canonical


@dataclasses.dataclass(frozen=True)
class Request:
    """The inputs a run asked for, and when and where; ``code_path`` and ``ranks`` say for whom."""

    program: str
    key: str
    inputs: dict[str, Any]
    requested: str
    host: str
    code_path: str = ""
    ranks: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Asked:
    """One distinct build a run asks for: its key, inputs, code-path class name and ranks."""

    key: str
    inputs: Mapping[str, Any]
    code_path: str = ""
    ranks: Sequence[int] = ()


def write_requests(path: Path, program: str, asked: Sequence[Asked]) -> list[Request]:
    """Record this run's requests, made now on this host, at ``path`` (atomically, replacing)."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    host = socket.gethostname()
    requests = [
        Request(program, item.key, canonical(dict(item.inputs)), now, host, item.code_path, tuple(item.ranks))
        for item in asked
    ]
    text = json.dumps({"requests": [dataclasses.asdict(r) for r in requests]}, indent=2, sort_keys=True) + "\n"
    durable.replace_atomically(path, text)
    return requests


def read_requests(path: Path) -> list[Request]:
    """The requests recorded at ``path``; empty if there are none, ``CorruptEntry`` if unreadable."""
    try:
        records = json.loads(path.read_text(encoding="utf-8"))["requests"]
        requests = [_request(record) for record in records]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CorruptEntry(path, f"request record unreadable ({error})") from error
    return requests


def _request(record: dict[str, Any]) -> Request:
    fields = {field.name: record[field.name] for field in dataclasses.fields(Request) if field.name in record}
    request = Request(**fields)
    if not isinstance(request.inputs, dict) or not isinstance(request.key, str):
        raise TypeError("fields of the wrong type")
    return dataclasses.replace(request, ranks=tuple(int(rank) for rank in request.ranks))
