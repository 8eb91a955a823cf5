#!/usr/bin/env bash
# The dynamical core orchestrated on the GPU, checked against the CPU and timed.
#
#   scripts/gpu_dycore.sh [OUT]   # OUT: one log per run and one comparison per pair (default
#                                 # benchmark_results/gpu); the runs' files go to WORK (default: a new
#                                 # folder under /tmp; a given WORK must be empty: the driver never
#                                 # writes into a used output folder)
#
# 1. Builds, all at once: each configuration below in `Build` mode (the GPU ones from
#    abstract arrays, as on a login node), so that the timed runs only load them.
# 2. Correctness: C24 Williamson case 2 for DAYS (default 1) days orchestrated on
#    `dace:gpu` and, at the same time, the reference in Python mode with numpy. Their
#    final fields are compared (scripts/compare_runs.py); nvcc contracts multiply-adds,
#    so they agree to round-off, not bitwise.
# 3. Speed, for each of TIMING_RESOLUTIONS (e.g. "96 192"; none by default), NZ layers
#    (default 8), dt = 21600 s / resolution, a quarter of a day: orchestrated on
#    `dace:gpu`, then on `dace:cpu`, one after the other; compared like the above, and
#    the summaries give the ms per step.
# BUILD_ONLY=1 stops after step 1 (build now, e.g. beside other work; a later call of this
# script finds the builds in the cache and goes on to the runs).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/setup_env.sh || exit 2
OUT="${1:-$ROOT/benchmark_results/gpu}"
WORK="${WORK:-$(mktemp -d /tmp/gpu_dycore.XXXXXX)}"
mkdir -p "$OUT" "$WORK"
STARTED=$SECONDS
export ORCHESTRA_CUDA_ARCH="${ORCHESTRA_CUDA_ARCH:-$(python -c "import cupy; print(cupy.cuda.Device(0).compute_capability)")}"
quiet=(--set output.netcdf_interval_hours=0 --set output.restart_interval_hours=0 --set output.plot=false)
case2=(configs/c24_case2.yaml --set "days=${DAYS:-1}" "${quiet[@]}")
sized() {  # the configuration at resolution $1
    echo configs/c24_case2.yaml --set "resolution=$1" --set "nz=${NZ:-8}" \
        --set "dt=$(python -c "print(21600 / $1)")" --set days=0.25 "${quiet[@]}"
}

run() {  # run NAME FV3_DACEMODE CONFIG... : the driver; output in $WORK/NAME, log in $OUT/NAME.log
    local name="$1" mode="$2" log
    shift 2
    log="$OUT/$name.log"
    if [ "$mode" = Build ]; then  # its own folder: the driver never writes into a used one
        name="$name.build"
        log="$WORK/$name.log"
    fi
    echo "[gpu_dycore] $name: FV3_DACEMODE=$mode scripts/run.sh $*"
    FV3_DACEMODE="$mode" scripts/run.sh "$@" --set "output.directory=$WORK/$name" >"$log" 2>&1
    local status=$?
    tail -n 12 "$log"
    echo "[gpu_dycore] $name: exit $status after $((SECONDS - STARTED)) s"
    return $status
}

status=0
builds=()
run c24_gpu Build "${case2[@]}" --set backend=dace:gpu & builds+=($!)
for n in ${TIMING_RESOLUTIONS:-}; do
    for device in gpu cpu; do
        run "c${n}_$device" Build $(sized "$n") --set "backend=dace:$device" & builds+=($!)
    done
done
for pid in "${builds[@]}"; do wait "$pid" || status=1; done
if [ "${BUILD_ONLY:-0}" = 1 ]; then
    echo "[gpu_dycore] builds done (status $status) in $((SECONDS - STARTED)) s; BUILD_ONLY=1: no runs"
    exit $status
fi

run c24_gpu BuildAndRun "${case2[@]}" --set backend=dace:gpu & gpu=$!
run c24_reference Python "${case2[@]}" --set backend=numpy || status=1
wait $gpu || status=1
python scripts/compare_runs.py "$WORK/c24_reference" "$WORK/c24_gpu" | tee "$OUT/c24_compare.txt" || status=1

for n in ${TIMING_RESOLUTIONS:-}; do
    run "c${n}_gpu" BuildAndRun $(sized "$n") --set backend=dace:gpu || status=1
    run "c${n}_cpu" BuildAndRun $(sized "$n") --set backend=dace:cpu || status=1
    python scripts/compare_runs.py "$WORK/c${n}_cpu" "$WORK/c${n}_gpu" | tee "$OUT/c${n}_compare.txt" || status=1
done
echo "[gpu_dycore] done (status $status) in $((SECONDS - STARTED)) s; results in $OUT"
exit $status
