#!/usr/bin/env bash
# Build times of the README job in one tree: a cold build, a build with DaCe's machine-global
# compile caches kept (orchestra's and gt4py's caches emptied), and an edit of one stencil.
#
#   scripts/build_times.sh [TREE] [LABEL]
#
# TREE defaults to this checkout; LABEL (default: the tree's commit) names the scratch folder
# /tmp/build_times_LABEL, which holds the caches and each job's log. To compare two versions in
# one run (the same load), check the older one out as a worktree with its own .venv and call
# this script once per tree, one after the other. Prints one line per job: its wall time and the
# orchestrated program's first-call line (parse, optimize, compile).
set -u
TREE="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)"
LABEL="${2:-$(git -C "$TREE" rev-parse --short HEAD)}"
SCRATCH="/tmp/build_times_$LABEL"
export ORCHESTRA_CACHE_DIR="$SCRATCH/orchestra" GT_CACHE_ROOT="$SCRATCH/gt"
EDITED="$TREE/driver/stencils/diffusion.py"

job() {
    local start end
    start=$(date +%s.%N)
    (cd "$TREE" && scripts/run.sh configs/c24_case2.yaml > "$SCRATCH/$1.log" 2>&1)
    end=$(date +%s.%N)
    printf '%s %s: job %.1f s; %s\n' "$LABEL" "$1" "$(echo "$end - $start" | bc)" \
        "$(grep -m1 -o 'first call.*' "$SCRATCH/$1.log" | cut -c1-220)"
}

rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
rm -rf /dev/shm/dace_build_cache_* "${TMPDIR:-/tmp}"/dace_build_cache_*   # DaCe's machine-global caches
job cold
rm -rf "$ORCHESTRA_CACHE_DIR" "$GT_CACHE_ROOT"
job caches_kept
cp "$EDITED" "$SCRATCH/edited.bak"
trap 'cp "$SCRATCH/edited.bak" "$EDITED"' EXIT   # the edit is undone whatever happens
sed -i '0,/flux_w = (q - q\[-1, 0, 0\]) \* x_weight/s//flux_w = (q - q[-1, 0, 0]) * (1.0 * x_weight)/' "$EDITED"
job edit
