#!/usr/bin/env bash
# Creates .venv (once) with orchestra installed in editable mode, and exports
# what every orchestra script needs. Source it: `source scripts/setup_env.sh`.
# Sourced into an interactive shell it must not change that shell's options
# (no `set -e` there), so failures are handled here and returned.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3}"
if [ -n "${ORCHESTRA_ACTIVE_ENV:-}" ]; then
    # Use the Python environment already active (an HPC module stack, a container, an
    # offline GPU node with carried wheels) instead of creating .venv; nothing is installed.
    if ! "$PYTHON" -c "import gt4py, dace, numpy" 2>/dev/null; then
        echo "[setup] ORCHESTRA_ACTIVE_ENV is set, but $PYTHON cannot import gt4py, dace and numpy;" \
             "install orchestra's requirements (setup.cfg) there, or unset ORCHESTRA_ACTIVE_ENV to use .venv" >&2
        return 1 2>/dev/null || exit 1
    fi
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
elif [ ! -x "$VENV/bin/python" ] || [ ! -f "$VENV/.orchestra-installed" ] || [ "$ROOT/setup.cfg" -nt "$VENV/.orchestra-installed" ]; then
    echo "[setup] creating $VENV and installing orchestra (first run takes a few minutes)"
    if ! { "$PYTHON" -m venv "$VENV" \
            && "$VENV/bin/pip" install --quiet --upgrade pip wheel setuptools \
            && "$VENV/bin/pip" install --quiet -e "$ROOT[test]"; }; then
        echo "[setup] installing into $VENV failed (see pip's message above); fix it and source this script again" >&2
        return 1 2>/dev/null || exit 1
    fi
    touch "$VENV/.orchestra-installed"
fi
[ -n "${ORCHESTRA_ACTIVE_ENV:-}" ] || export PATH="$VENV/bin:$PATH"
# Open MPI: allow running as root and more ranks than cores (containers, laptops, CI).
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe   # the same for Open MPI 5's launcher
# Waiting ranks should yield the CPU instead of busy-polling (2-core machines).
export OMPI_MCA_mpi_yield_when_idle=1
# gt4py's stencil cache lives with the project, not in the working directory of each test.
export GT_CACHE_ROOT="${GT_CACHE_ROOT:-$ROOT/.gt_cache_root}"
