#!/usr/bin/env bash
# GPU checks, on a machine with an NVIDIA GPU: the GPU tests (compile-only and
# runtime) and the GPU benchmark of the example model. One command:
#
#   scripts/gpu_check.sh                 # tests, then benchmark
#   scripts/gpu_check.sh --tests-only    # or --bench-only
#
# Environment: ORCHESTRA_CUDA_ARCH (default: GPU 0's compute capability),
# GPU_CHECK_OUT (where logs and benchmark JSON go; default benchmark_results/gpu),
# BENCH_ARGS (extra arguments of scripts/bench_gpu.py, e.g. "--sizes 128 256 --nz 80").
# Exit status: 0 all passed, 1 a test or the benchmark failed, 2 the machine lacks
# something the checks need (the message says what).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh"
cd "$ROOT"

run_tests=1
run_bench=1
case "${1:-}" in
    --tests-only) run_bench=0 ;;
    --bench-only) run_tests=0 ;;
    "") ;;
    *) echo "usage: $0 [--tests-only|--bench-only]" >&2; exit 2 ;;
esac
OUT="${GPU_CHECK_OUT:-$ROOT/benchmark_results/gpu}"
mkdir -p "$OUT"

# --- what this machine has -------------------------------------------------------
if ! nvidia-smi -L; then
    echo "[gpu_check] no NVIDIA GPU: nvidia-smi failed. The compile-only GPU tests run anywhere" \
         "nvcc exists: python -m pytest tests/gpu" >&2
    exit 2
fi
driver_cuda="$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9]*\)\..*/\1/p' | head -1)"
if ! command -v nvcc >/dev/null && [ -z "${CUDACXX:-}" ]; then
    echo "[gpu_check] nvcc not found: put the CUDA toolkit's bin/ on PATH (or set CUDACXX)" >&2
    exit 2
fi
nvcc_cuda="$("${CUDACXX:-nvcc}" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')"
echo "[gpu_check] driver supports CUDA ${driver_cuda:-?}, nvcc is CUDA ${nvcc_cuda:-?}, cmake $(cmake --version | head -1)"
if [ -n "$driver_cuda" ] && [ -n "$nvcc_cuda" ] && [ "$nvcc_cuda" -gt "$driver_cuda" ]; then
    echo "[gpu_check] nvcc (CUDA $nvcc_cuda) is newer than the driver (CUDA $driver_cuda): programs it" \
         "builds cannot run here. Use a CUDA $driver_cuda toolkit (CUDACXX=.../bin/nvcc)." >&2
    exit 2
fi
if ! "$PYTHON" -c "import cupy" 2>/dev/null; then
    wheel="cupy-cuda${driver_cuda:-13}x"
    echo "[gpu_check] cupy is missing; installing $wheel (the gpu extra: pip install -e '.[gpu]')"
    if ! "$PYTHON" -m pip install --quiet --retries 0 --timeout 20 "$wheel"; then
        echo "[gpu_check] could not install $wheel; install it (or cupy-cuda12x/13x matching the driver)" \
             "into .venv and run again" >&2
        exit 2
    fi
fi
reason="$("$PYTHON" -c 'from tests.gpu.gpu_env import gpu_missing_reason; print(gpu_missing_reason() or "")')"
if [ -n "$reason" ]; then
    echo "[gpu_check] the GPU tests cannot run: $reason" >&2
    exit 2
fi
export ORCHESTRA_CUDA_ARCH="${ORCHESTRA_CUDA_ARCH:-$("$PYTHON" -c "import cupy; print(cupy.cuda.Device(0).compute_capability)")}"
echo "[gpu_check] cuda_arch $ORCHESTRA_CUDA_ARCH; logs and results in $OUT"

status=0
# --- tests: compile-only builds, then runtime comparisons on the GPU ---------------
if [ "$run_tests" = 1 ]; then
    OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" "$PYTHON" -m pytest tests/gpu -v -rs --durations=10 2>&1 \
        | tee "$OUT/gpu_tests.log" || status=1
fi

# --- benchmark of the example model (ms per call; ratios measured in one run) ------
if [ "$run_bench" = 1 ]; then
    # CPU variants use every core, so that "gpu vs cpu" compares whole devices.
    OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}" "$PYTHON" scripts/bench_gpu.py ${BENCH_ARGS:-} \
        --json "$OUT/bench_gpu_example.json" 2>&1 | tee "$OUT/bench_gpu_example.log" || status=1
    # The dynamical core on the GPU (checked against the CPU, timed): scripts/gpu_dycore.sh.
fi
echo "[gpu_check] done (status $status); results in $OUT"
exit "$status"
