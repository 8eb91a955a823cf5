#!/usr/bin/env bash
# Run the shallow-water model under mpirun.
#
#   scripts/run.sh [CONFIG] [driver options...]
#
# CONFIG defaults to configs/c24_case2.yaml (C24 Williamson case 2 on 6 ranks).
# The number of ranks, 6 * layout**2, is read from the configuration (after any
# --set layout=N). The run is orchestrated (FV3_DACEMODE=BuildAndRun: build on first
# use, then reuse the cached build) unless FV3_DACEMODE is already set; set
# FV3_DACEMODE=Python to run the stencils one by one.
#
# Examples:
#   scripts/run.sh
#   scripts/run.sh configs/c24_case6.yaml
#   FV3_DACEMODE=Python scripts/run.sh configs/c24_case2.yaml --set backend=numpy --set days=1
#   scripts/run.sh configs/c24_case2.yaml --namelist configs/input.nml
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/setup_env.sh

CONFIG="${1:-configs/c24_case2.yaml}"
if [ $# -gt 0 ]; then shift; fi
# Unset means BuildAndRun here; set but empty is an error (orchestra would read it as Python).
if [ -n "${FV3_DACEMODE+set}" ] && [ -z "$FV3_DACEMODE" ]; then
    echo "[run.sh] FV3_DACEMODE is set but empty: set it to Python, Build, BuildAndRun or Run, or unset it (BuildAndRun)" >&2
    exit 2
fi
export FV3_DACEMODE="${FV3_DACEMODE:-BuildAndRun}"
# One thread per rank: the ranks already fill the cores (OpenMP threads would oversubscribe them).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"

RANKS="$(python -c '
import sys
from driver.config import ConfigError, load_config, parse_overrides
args = sys.argv[2:]
namelist = args[args.index("--namelist") + 1] if "--namelist" in args else None
sets = [args[i + 1] for i, a in enumerate(args) if a == "--set" and i + 1 < len(args)]
try:
    print(load_config(sys.argv[1], namelist, parse_overrides(sets)).total_ranks)
except ConfigError as error:
    print(f"configuration error: {error}", file=sys.stderr)
    sys.exit(2)
' "$CONFIG" "$@")"

echo "[run.sh] mpirun -n $RANKS python -m driver $CONFIG $* (FV3_DACEMODE=$FV3_DACEMODE)"
exec mpirun -n "$RANKS" --oversubscribe python -m driver "$CONFIG" "$@"
