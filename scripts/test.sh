#!/usr/bin/env bash
# Runs the whole test suite (serial and MPI tests). Sets up .venv on first use.
# Usage: scripts/test.sh [pytest arguments]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh"
cd "$ROOT"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
exec python -m pytest -q "$@"
