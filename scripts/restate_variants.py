"""orchestra's pass restating nested SDFGs for DaCe 2's contract, with DaCe's integration or orchestra's stand-in.

Usage::

    python scripts/restate_variants.py PARSED_SDFG [LABEL ...]

``PARSED_SDFG`` is a build's ``stages/0_parsed.sdfgz`` (saved with
``ORCHESTRA_VERBOSE=1`` or ``DaceConfig(verbose=True)``). Each label runs
:func:`orchestra.pipeline.nested_contract.restate_nested_sdfgs` on a fresh
copy of the program (the pass is the one a parse ends with; on a parsed
program it restates every connector again, the same work):

* ``dace``: with DaCe's own ``integrate_nested_sdfg``, ``rebase_descendants``, ``_same_container`` and ``_windowed_edges``;
* ``orchestra``: inside :func:`orchestra.toolchain.descendant_rebase.rebase_once_per_integration`, as a build does.

Prints each time with the load, and whether every label left the same
program. Default labels: ``orchestra dace``; repeat labels to alternate them.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import time


def main() -> None:
    import dace

    from orchestra.observe.program_text import program_text
    from orchestra.pipeline.nested_contract import restate_nested_sdfgs
    from orchestra.toolchain.descendant_rebase import rebase_once_per_integration

    path, labels = sys.argv[1], sys.argv[2:] or ["orchestra", "dace"]
    contexts = {"dace": contextlib.nullcontext, "orchestra": rebase_once_per_integration}
    if set(labels) - set(contexts):
        sys.exit(f"unknown label(s) {sorted(set(labels) - set(contexts))}: use {', '.join(contexts)}")
    pickled = pickle.dumps(dace.SDFG.from_file(path))  # a fresh copy per label, quicker than reading the file
    texts = {}
    for label in labels:
        sdfg = pickle.loads(pickled)
        start = time.perf_counter()
        with contexts[label]():
            restate_nested_sdfgs(sdfg, "restate_variants")
        print(f"{label}: restated in {time.perf_counter() - start:.2f} s; load {os.getloadavg()[0]:.1f}", flush=True)
        texts.setdefault(label, program_text(sdfg))
    print("same program:", len(set(texts.values())) == 1)


if __name__ == "__main__":
    main()
