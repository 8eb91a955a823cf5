"""The built program and its signature saved beside the library, by a forked child during code generation.

A build keeps the optimized program as ``program.sdfgz`` (what
``orchestra sdfg`` and a loader without a signature read), a stripped copy
with only its calling interface as ``signature.sdfgz`` (what a loader
reads), and where each callback is called. Saving them walks the whole
program: at 324 stencils DaCe's ``to_json`` 40-55 s, the signature's
argument list 15 s. They used to be saved by a thread once the code was
generated, which an edit's build (one of its files compiled, 21 s) waited
57 s for.

DaCe's code generation prepares the program (connector types, default
storage and schedules, library nodes expanded, targets' preprocessing),
then generates the frame from it, the program "assumed frozen from this
point onwards" (DaCe's words). :meth:`PendingSave.when_frozen` starts the
save at that point, the frame generator's call on the whole program, in a
forked child (:mod:`orchestra.pipeline.forked_child`), so it runs on an idle
core during the rest of code generation (two thirds of it) and the compiler.
The file is the one a save after code generation writes (compared on the
FV3-size benchmark's program and in the tests). Where no fork is possible,
or ``ORCHESTRA_VALIDATE_BESIDE=0``, it is saved in place at that point;
where code generation never reaches it, after code generation.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import json
import logging
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

from orchestra.calls.callback_errors import CALLBACK_SITES_FILE, callback_lines
from orchestra.errors import BuildError
from orchestra.pipeline.forked_child import VARIABLE, ForkedChild, fork_work, forking_allowed
from orchestra.toolchain.stand_in import standing_in

log = logging.getLogger("orchestra")

#: A stripped SDFG holding only what calling the library needs (see save_signature).
SIGNATURE_FILE = "signature.sdfgz"
#: The whole optimized program, as built.
PROGRAM_FILE = "program.sdfgz"

_lock = threading.RLock()  # one build's code generation at a time replaces DaCe's frame generator


class PendingSave:
    """Saving ``sdfg`` into the build folder ``folder``: started once, waited for before the build is published."""

    def __init__(self, sdfg: Any, folder: Path) -> None:
        self._sdfg, self._folder = sdfg, folder
        self._started = False
        self._child: Optional[ForkedChild] = None
        self._failure: Optional[str] = None

    @contextlib.contextmanager
    def when_frozen(self) -> Iterator[None]:
        """Within: DaCe's frame generator, called on the whole program, starts the save first."""
        from dace.codegen.targets.framecode import DaCeCodeGenerator

        with _lock:
            generate = DaCeCodeGenerator.generate_code

            def generate_code(frame: Any, sdfg: Any, *args: Any, **kwargs: Any) -> Any:
                if sdfg is self._sdfg:
                    self.start()
                return generate(frame, sdfg, *args, **kwargs)

            with standing_in(DaCeCodeGenerator, {"generate_code": generate_code}):
                yield

    def start(self) -> None:
        """Save now (once): in a forked child where forking is allowed, here otherwise."""
        if self._started:
            return
        self._started = True
        if forking_allowed():
            self._child = fork_work(lambda: save_program(self._sdfg, self._folder))
            return
        try:
            save_program(self._sdfg, self._folder)
        except Exception as error:  # raised by wait(), not into DaCe's code generation
            self._failure = str(error) or type(error).__name__

    def wait(self) -> None:
        """Wait for the save (started here if code generation never started it); a failure is a BuildError."""
        self.start()
        if self._child is not None:
            message, lost = self._child.outcome()
            self._child = None
            if lost:  # (a lock another thread held at the fork, or want of memory)
                message = (f"the forked process saving it was lost: {lost}; build again, or with {VARIABLE}=0 "
                           "to save in place")
            self._failure = message
        if self._failure is not None:
            raise BuildError(f"saving the program and its signature in {self._folder} failed: {self._failure}")

    def abandon(self) -> None:
        """Stop a save still under way (the build failed)."""
        if self._child is not None:
            self._child.kill()
            self._child = None


def save_program(sdfg: Any, folder: Path) -> None:
    """Save the program, its signature and its callback sites into ``folder``.

    What it needs is imported with this module, not in a forked child: an
    import lock another thread held at the fork would never be released there.
    """
    folder.mkdir(parents=True, exist_ok=True)  # (before code generation's files are written into it)
    save_sdfg(sdfg, folder / PROGRAM_FILE)
    save_signature(sdfg, sdfg.name, folder)  # DaCe names the library after the program
    (folder / CALLBACK_SITES_FILE).write_text(json.dumps(callback_lines(sdfg), sort_keys=True))


def save_sdfg(sdfg: Any, path: Path) -> None:
    """``sdfg.save(path, hash=False, compress=True)``'s file, its JSON text made by the C encoder in one go.

    DaCe's ``save`` streams the JSON with ``json.dump``, which runs Python's
    pure-Python encoder: 38 s for the 196 MB of the 324-stencil benchmark's
    program against 7.7 s for ``json.dumps`` (the same text; compared, load 5).
    ``gzip``'s default level 6 instead of 9: 2.0 s against 3.7 s, 6% larger.
    """
    from dace import serialize  # (imported by the time a program is saved: code generation is DaCe's)

    text = serialize.dumps(sdfg.to_json(hash=False))
    with gzip.open(path, "wt", compresslevel=6) as stream:
        stream.write(text)


def signature_sdfg(sdfg: Any, name: str) -> Any:
    """The program's calling interface as an SDFG without its body."""
    import dace

    stub = dace.SDFG(name)
    for data_name, desc in sdfg.arrays.items():
        if not desc.transient:
            stub.add_datadesc(data_name, copy.deepcopy(desc))
    for symbol in sdfg.free_symbols:
        stub.add_symbol(symbol, sdfg.symbols[symbol])
    stub.constants_prop = copy.deepcopy(sdfg.constants_prop)
    stub.callback_mapping = dict(sdfg.callback_mapping)
    stub.arg_names = list(sdfg.arg_names)
    body = stub.add_state("body_in_library")
    used = sorted(sdfg.used_symbols(all_symbols=False))
    if used:  # arglist() counts symbols the graph uses (callbacks are symbols too)
        end = stub.add_state("end")
        assignments = {f"__orchestra_use_{i}": symbol for i, symbol in enumerate(used)}
        stub.add_edge(body, end, dace.InterstateEdge(assignments=assignments))
    return stub


def save_signature(sdfg: Any, name: str, folder: Path) -> None:
    """Save the signature SDFG next to the library, if it gives the same C signature.

    (The callback sites, where each callback is called, are saved beside it
    by :func:`save_program`: the signature has no body to find them in.)

    Loading deserializes the SDFG; the whole program takes seconds per rank
    (a 300 KB model took 3 s alone, 24 s with 6 ranks loading at once on 2
    cores). The calling interface is all a loader needs. It is saved only
    if its argument list equals the full program's, name for name and type
    for type; otherwise loaders read the full ``program.sdfgz``.
    """
    stub = signature_sdfg(sdfg, name)
    full, short = sdfg.arglist(), stub.arglist()  # the program's: a walk of all of it (15 s at 324 stencils)
    same = list(full) == list(short) and all(full[k].to_json() == short[k].to_json() for k in full)
    same = same and (sdfg.signature_arglist(with_types=True, arglist=full)
                     == stub.signature_arglist(with_types=True, arglist=short))
    if same:
        stub.save(str(folder / SIGNATURE_FILE), compress=True)
    else:
        log.info("%s: loaders will read the full program (signature differs from its stub)", name)
