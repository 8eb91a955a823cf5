#!/usr/bin/env bash
# Runs orchestrated programs built with AddressSanitizer, so that a write past an array stops at the
# kernel that makes it instead of crashing later (or never). With no arguments: the tests whose models
# reach the defects of issue 54 (plain gt4py stencils with regions, callbacks at every depth, random
# callback programs) and the idiom corpus; otherwise the command given, e.g.
#   scripts/memcheck.sh python my_model.py
# Builds go to a cache of their own (the sanitizer's flags are in the key as well).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh"
ASAN_LIBRARY="$(${CXX:-g++} -print-file-name=libasan.so)"
if [ ! -e "$ASAN_LIBRARY" ]; then
    echo "[memcheck] the compiler has no AddressSanitizer runtime (libasan.so); install it (Debian: libasan8)" >&2
    exit 2
fi
export ORCHESTRA_SANITIZE=address
export ORCHESTRA_CACHE_DIR="${ORCHESTRA_CACHE_DIR:-$ROOT/.orchestra_cache_asan}"
# Python itself is not instrumented: no leak report (its allocations look like leaks), no link-order check
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:verify_asan_link_order=0:abort_on_error=1}"
if [ "$#" -eq 0 ]; then
    set -- python -m pytest -q -p no:xdist -p no:cacheprovider \
        tests/stencils/test_plain_gt4py_stencils.py tests/calls/test_callback_bindings.py \
        tests/calls/test_random_callback_programs.py tests/idioms
fi
echo "[memcheck] $* (AddressSanitizer: $ASAN_LIBRARY)"
LD_PRELOAD="$ASAN_LIBRARY" "$@"
