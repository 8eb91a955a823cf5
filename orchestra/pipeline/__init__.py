"""The build flow of an orchestrated program, as a chain of steps with typed results.

The first call of an orchestrated method (``OrchestratedProgram._obtain`` in
:mod:`orchestra.orchestrate`) goes through, on every rank:

1. **request** -- :class:`~.request.BuildRequest` (:mod:`.request`): the DaCe
   program, the call's arguments and every build option;
2. **key** -- :func:`~.request.key_request` -> :class:`~.request.KeyedRequest`
   (:mod:`.request`): build inputs found without parsing
   (:mod:`orchestra.key.inputs`), fingerprinted (:mod:`orchestra.cache.fingerprint`);
3. **entry** -- :func:`~.obtain.ensure_built` (:mod:`.obtain`): ranks agree on
   keys, and the chosen builder of each key looks it up in the store and, on a
   miss, builds it under the key's lock (:func:`~.obtain.cached_build`), with
   :func:`~.build.build_and_publish` (:mod:`.build`) running the stages below
   in a staging folder and publishing it atomically; after parsing,
   :mod:`.audit` checks that the parse used nothing the key does not hold;
4. **load** -- :func:`~.obtain.load_entry` (:mod:`.obtain`): each rank loads the
   build of its own key, checksums verified; calls then go through
   :class:`orchestra.calls.fast_path.FastCaller`.

The stages of a build (:mod:`.stages`), each a function taking the previous
stage's result and returning a small immutable record you can inspect, save or
test on its own::

    parsed = parse(program, args, kwargs)          # ParsedProgram
    optimized = optimize(parsed, options)           # OptimizedProgram
    compiled = compile_program(optimized, folder)   # CompiledProgram (a record)
    loaded = load(compiled.folder)                  # LoadedProgram (callable)

``compile_program`` only builds the library; ``load`` opens it in the calling
process, so a building rank hands other ranks only a folder path.
:mod:`.abstract_arrays` stands in for device arrays when a GPU build is made
on a machine without a GPU.
"""

from orchestra.pipeline.stages import (
    CompiledProgram,
    LoadedProgram,
    OptimizedProgram,
    OptimizeOptions,
    ParsedProgram,
    compile_program,
    load,
    optimize,
    parse,
)

__all__ = [
    "CompiledProgram",
    "LoadedProgram",
    "OptimizeOptions",
    "OptimizedProgram",
    "ParsedProgram",
    "compile_program",
    "load",
    "optimize",
    "parse",
]
