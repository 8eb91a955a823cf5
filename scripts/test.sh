#!/usr/bin/env bash
# Runs the whole test suite (serial and MPI tests). Sets up .venv on first use.
# Usage: scripts/test.sh [pytest arguments]
# Test files run in parallel, one pytest-xdist worker per core (at most 4); every file's tests stay
# on one worker, so a module's shared builds are made once. ORCHESTRA_TEST_WORKERS=N overrides the
# count; 0 runs every test in this process (what a debugger or `-x` on one test wants).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh"
cd "$ROOT"
# (GNU nproc counts OMP_NUM_THREADS as the core count: ask before setting it.)
workers="${ORCHESTRA_TEST_WORKERS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
case "$workers" in
    ''|*[!0-9]*) echo "scripts/test.sh: ORCHESTRA_TEST_WORKERS must be a whole number of workers (0: none), not '$workers'" >&2
                 exit 2 ;;
esac
if [ "$workers" -gt 4 ]; then workers=4; fi
exec python -m pytest -q -n "$workers" --dist loadfile "$@"
