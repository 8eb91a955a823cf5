"""Request records: the inputs a run most recently asked for, per program.

A run records its request before looking up its build, so that
``orchestra cache explain`` can later compare what was asked for with what
is available. Records are replaced atomically: a reader sees the previous
request or the new one, never a mix.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import socket
from pathlib import Path
from typing import Any, Mapping

from orchestra.cache import durable
from orchestra.cache.errors import CorruptEntry
from orchestra.cache.fingerprint import canonical


@dataclasses.dataclass(frozen=True)
class Request:
    """The inputs a run asked for, and when and where."""

    program: str
    key: str
    inputs: dict[str, Any]
    requested: str
    host: str


def write_request(path: Path, program: str, key: str, inputs: Mapping[str, Any]) -> Request:
    """Record a request made now on this host at ``path`` (atomically)."""
    request = Request(
        program=program,
        key=key,
        inputs=canonical(dict(inputs)),
        requested=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        host=socket.gethostname(),
    )
    text = json.dumps(dataclasses.asdict(request), indent=2, sort_keys=True) + "\n"
    durable.replace_atomically(path, text)
    return request


def read_request(path: Path) -> Request | None:
    """The request recorded at ``path``; None if there is none, ``CorruptEntry`` if unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        request = Request(**{field.name: data[field.name] for field in dataclasses.fields(Request)})
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CorruptEntry(path, f"request record unreadable ({error})") from error
    if not isinstance(request.inputs, dict) or not isinstance(request.key, str):
        raise CorruptEntry(path, "request record has fields of the wrong type")
    return request
