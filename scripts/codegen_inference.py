"""DaCe's code generation of one saved program, with and without the descriptor walk done once per SDFG.

Usage::

    python scripts/codegen_inference.py BUILD_FOLDER [once|dace ...]

``BUILD_FOLDER`` is a build's cache folder with ``stages/3_optimized.sdfgz``
(saved with ``ORCHESTRA_VERBOSE=1`` or ``DaceConfig(verbose=True)``) and its
``dace.conf``. Each label generates the code of a fresh copy: ``once`` inside
:func:`orchestra.toolchain.inference_symbols.inference_with_symbols_once`,
``dace`` as DaCe does it. Prints the times and whether the generated code is
the same. Default order: ``once dace``.
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    import dace
    from dace.codegen import codegen

    from orchestra.toolchain.inference_symbols import inference_with_symbols_once

    folder, labels = sys.argv[1], sys.argv[2:] or ["once", "dace"]
    dace.Config.load(os.path.join(folder, "dace.conf"))
    codes = {}
    for label in labels:
        sdfg = dace.SDFG.from_file(os.path.join(folder, "stages", "3_optimized.sdfgz"))
        sdfg.fill_scope_connectors()
        start = time.perf_counter()
        if label == "once":
            with inference_with_symbols_once():
                code_objects = codegen.generate_code(sdfg, validate=False)
        else:
            code_objects = codegen.generate_code(sdfg, validate=False)
        print(f"{label}: code generation {time.perf_counter() - start:.1f} s; load {os.getloadavg()}", flush=True)
        codes[label] = [obj.clean_code for obj in code_objects]
    print("same code:", len({repr(code) for code in codes.values()}) == 1)


if __name__ == "__main__":
    main()
