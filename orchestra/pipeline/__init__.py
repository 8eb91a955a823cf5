"""The build pipeline: parse -> optimize -> compile -> load.

Each stage is a function taking the previous stage's result and returning a
small immutable record you can inspect, save or test on its own::

    parsed = parse(program, args, kwargs)          # ParsedProgram
    optimized = optimize(parsed, options)           # OptimizedProgram
    compiled = compile_program(optimized, folder)   # CompiledProgram (a record)
    loaded = load(compiled.folder)                  # LoadedProgram (callable)

``compile_program`` only builds the library; ``load`` opens it in the calling
process, so a building rank hands other ranks only a folder path.
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
