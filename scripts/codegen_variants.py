"""DaCe's code generation of one saved program with and without orchestra's work-arounds: time, and the same code?

Usage::

    python scripts/codegen_variants.py BUILD_FOLDER [LABEL ...]

``BUILD_FOLDER`` is a build's cache folder with ``stages/3_optimized.sdfgz``
(saved with ``ORCHESTRA_VERBOSE=1`` or ``DaceConfig(verbose=True)``) and its
``dace.conf``. Each label generates the code of a fresh copy of the program:

* ``dace``: as DaCe does it alone;
* ``inference``: inside :func:`orchestra.toolchain.inference_symbols.inference_with_symbols_once`;
* ``raising``: inside :func:`orchestra.toolchain.control_flow_raising.raising_only_where_possible`;
* ``sharing``: inside :func:`orchestra.toolchain.function_sharing.hashing_only_where_shared`;
* ``hashing_all``: inside the first two, every nested SDFG hashed as DaCe does;
* ``quadratic_dedup``: inside those three, DaCe's own ``deduplicate`` (without
  :func:`orchestra.toolchain.deduplication.linear_deduplication`);
* ``orchestra``: inside all four, as a build does.

Prints each time with the load, and whether every label generated the same
code. Default labels: ``orchestra dace``; repeat labels to alternate them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time


def _contexts(label: str) -> list:
    from orchestra.toolchain.control_flow_raising import raising_only_where_possible
    from orchestra.toolchain.deduplication import linear_deduplication
    from orchestra.toolchain.function_sharing import hashing_only_where_shared
    from orchestra.toolchain.inference_symbols import inference_with_symbols_once

    three = [inference_with_symbols_once, raising_only_where_possible, hashing_only_where_shared]
    chosen = {"dace": [], "inference": [inference_with_symbols_once], "raising": [raising_only_where_possible],
              "sharing": [hashing_only_where_shared],
              "hashing_all": [inference_with_symbols_once, raising_only_where_possible],
              "quadratic_dedup": three, "orchestra": [*three, linear_deduplication]}
    if label not in chosen:
        sys.exit(f"unknown label {label!r}: one of {', '.join(chosen)}")
    return [make() for make in chosen[label]]


def main() -> None:
    import dace
    from dace.codegen import codegen

    folder, labels = sys.argv[1], sys.argv[2:] or ["orchestra", "dace"]
    dace.Config.load(os.path.join(folder, "dace.conf"))
    codes = {}
    for label in labels:
        sdfg = dace.SDFG.from_file(os.path.join(folder, "stages", "3_optimized.sdfgz"))
        sdfg.fill_scope_connectors()
        start = time.perf_counter()
        with contextlib.ExitStack() as stack:
            for context in _contexts(label):
                stack.enter_context(context)
            code_objects = codegen.generate_code(sdfg, validate=False)
        print(f"{label}: code generation {time.perf_counter() - start:.1f} s; load {os.getloadavg()[0]:.1f}", flush=True)
        codes.setdefault(label, [obj.clean_code for obj in code_objects])
    print("same code:", len({repr(code) for code in codes.values()}) == 1)


if __name__ == "__main__":
    main()
