#!/usr/bin/env bash
# The dynamical core orchestrated on the GPU, checked against the CPU and timed.
#
#   scripts/gpu_dycore.sh [OUT]   # OUT: one log per run and one comparison per pair (default
#                                 # benchmark_results/gpu); the runs' files go to WORK (/tmp/gpu_dycore)
#
# 1. Correctness: C24 Williamson case 2 for DAYS (default 1) days, orchestrated on
#    `dace:gpu` (BuildAndRun, 6 ranks sharing the GPU) and, at the same time, the
#    reference in Python mode with the numpy backend. Their final fields are compared
#    (scripts/compare_runs.py); nvcc contracts multiply-adds, so they agree to
#    round-off, not bitwise.
# 2. Speed, if TIMING_RESOLUTIONS is set (e.g. "96 192"): each resolution orchestrated
#    on `dace:gpu` and on `dace:cpu`, one after the other, same configuration; the
#    summaries give the ms per step. Skipped when fewer than TIME_LEFT_S seconds of
#    BUDGET_S remain (defaults 240 of 540), so that the results so far come back.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/setup_env.sh || exit 2
OUT="${1:-$ROOT/benchmark_results/gpu}"
WORK="${WORK:-/tmp/gpu_dycore}"
mkdir -p "$OUT" "$WORK"
STARTED=$SECONDS
export ORCHESTRA_CUDA_ARCH="${ORCHESTRA_CUDA_ARCH:-$(python -c "import cupy; print(cupy.cuda.Device(0).compute_capability)")}"
DAYS="${DAYS:-1}"

run() {  # run NAME FV3_DACEMODE CONFIG [--set ...]: the driver, its log in $OUT/NAME.log
    local name="$1" mode="$2"
    shift 2
    echo "[gpu_dycore] $name: FV3_DACEMODE=$mode scripts/run.sh $*"
    FV3_DACEMODE="$mode" scripts/run.sh "$@" --set output.plot=false \
        --set "output.directory=$WORK/$name" >"$OUT/$name.log" 2>&1
    local status=$?
    tail -n 12 "$OUT/$name.log"
    echo "[gpu_dycore] $name: exit $status after $((SECONDS - STARTED)) s"
    return $status
}

status=0
case2=(configs/c24_case2.yaml --set "days=$DAYS" --set output.netcdf_interval_hours=0
       --set output.restart_interval_hours=0)
run c24_gpu BuildAndRun "${case2[@]}" --set backend=dace:gpu &
gpu=$!
run c24_reference Python "${case2[@]}" --set backend=numpy || status=1
wait $gpu || status=1
python scripts/compare_runs.py "$WORK/c24_reference" "$WORK/c24_gpu" | tee "$OUT/c24_compare.txt" || status=1

for n in ${TIMING_RESOLUTIONS:-}; do
    if [ $((${BUDGET_S:-540} - (SECONDS - STARTED))) -lt "${TIME_LEFT_S:-240}" ]; then
        echo "[gpu_dycore] C$n timing skipped: too little of the time budget left"
        break
    fi
    sized=(configs/c24_case2.yaml --set "resolution=$n" --set "nz=${TIMING_NZ:-8}" --set "dt=$((21600 / n))"
           --set "days=${TIMING_DAYS:-0.25}" --set output.netcdf_interval_hours=0
           --set output.restart_interval_hours=0)
    run "c${n}_gpu" BuildAndRun "${sized[@]}" --set backend=dace:gpu || status=1
    run "c${n}_cpu" BuildAndRun "${sized[@]}" --set backend=dace:cpu || status=1
    python scripts/compare_runs.py "$WORK/c${n}_cpu" "$WORK/c${n}_gpu" | tee "$OUT/c${n}_compare.txt" || status=1
done
echo "[gpu_dycore] done (status $status) in $((SECONDS - STARTED)) s; results in $OUT"
exit $status
