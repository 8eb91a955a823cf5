// ---- orchestra debug checks (orchestra/passes/debug/runtime.h, added by codegen.py) ----
#ifndef ORCHESTRA_DEBUG_RUNTIME
#define ORCHESTRA_DEBUG_RUNTIME
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <dlfcn.h>

namespace orchestra_debug {

constexpr int kExitCode = @EXIT_CODE@;
constexpr int kMaxDims = @MAX_DIMS@;

struct Kernel {
    const char* program;
    const char* label;
    const char* stencil;
    const char* state;
    int index;
    int count;
};

// The written region of a field: inclusive [begin, end] with step per dimension,
// element strides, and the loop order (outermost first; innermost has the smallest stride).
struct Box {
    int ndim;
    long long begin[kMaxDims];
    long long end[kMaxDims];
    long long step[kMaxDims];
    long long stride[kMaxDims];
    int order[kMaxDims];
};

static long long sequence_counter = 0;

static inline long long next_sequence() { return ++sequence_counter; }

static const char* rank_prefix() {
    static char prefix[64] = {0};
    static bool done = false;
    if (!done) {
        done = true;
        const char* names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
        for (const char* name : names) {
            const char* value = std::getenv(name);
            if (value != nullptr && value[0] != '\0') {
                std::snprintf(prefix, sizeof(prefix), "[rank %s] ", value);
                break;
            }
        }
    }
    return prefix;
}

static const char* stencil_of(const Kernel& k) { return k.stencil[0] != '\0' ? k.stencil : "-"; }

[[noreturn]] static void end_job() {
    std::fflush(nullptr);
    using IsInitialized = int (*)();
    using Ensure = int (*)();
    using Release = void (*)(int);
    using Run = int (*)(const char*);
    auto initialized = reinterpret_cast<IsInitialized>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
    auto ensure = reinterpret_cast<Ensure>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
    auto release = reinterpret_cast<Release>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
    auto run = reinterpret_cast<Run>(dlsym(RTLD_DEFAULT, "PyRun_SimpleString"));
    if (initialized != nullptr && ensure != nullptr && release != nullptr && run != nullptr && initialized()) {
        int gil = ensure();
        run("import sys\n"
            "for _s in (sys.stdout, sys.stderr):\n"
            "    try:\n"
            "        _s.flush()\n"
            "    except Exception:\n"
            "        pass\n"
            "_m = sys.modules.get('mpi4py.MPI')\n"
            "try:\n"
            "    if _m is not None and _m.Is_initialized() and not _m.Is_finalized() and _m.COMM_WORLD.Get_size() > 1:\n"
            "        _m.COMM_WORLD.Abort(@EXIT_CODE@)\n"
            "except Exception:\n"
            "    pass\n");
        release(gil);
    }
    std::fflush(nullptr);
    std::_Exit(kExitCode);
}

static void format_index(char* out, size_t size, const long long* index, int ndim) {
    size_t used = std::snprintf(out, size, "(");
    for (int d = 0; d < ndim && used < size; ++d) {
        used += std::snprintf(out + used, size - used, d == 0 ? "%lld" : ", %lld", index[d]);
    }
    if (used < size) std::snprintf(out + used, size - used, ")");
}

// "%.17g" (round-trips a double), and plain "nan" whatever the sign bit of a NaN.
static const char* format_value(char* out, size_t size, double value) {
    if (value != value) {
        std::snprintf(out, size, "nan");
    } else {
        std::snprintf(out, size, "%.17g", value);
    }
    return out;
}

[[noreturn]] static void fail(const Kernel& k, long long seq, const char* check, const char* field,
                              const long long* index, int ndim, double value, const char* detail) {
    char where[256];
    format_index(where, sizeof(where), index, ndim);
    char shown[64];
    format_value(shown, sizeof(shown), value);
    char report[4096];
    std::snprintf(report, sizeof(report),
                  "%s[orchestra debug] CHECK FAILED: %s\n"
                  "%s  program: %s\n"
                  "%s  kernel:  k%d/%d %s (stencil %s), execution #%lld\n"
                  "%s  state:   %s\n"
                  "%s  field:   %s\n"
                  "%s  index:   %s\n"
                  "%s  value:   %s\n"
                  "%s  %s\n"
                  "%s  ending the job with exit status %d\n",
                  rank_prefix(), check, rank_prefix(), k.program, rank_prefix(), k.index, k.count, k.label,
                  stencil_of(k), seq, rank_prefix(), k.state, rank_prefix(), field, rank_prefix(), where,
                  rank_prefix(), shown, rank_prefix(), detail, rank_prefix(), kExitCode);
    std::fflush(stdout);
    std::fputs(report, stderr);
    std::fflush(stderr);
    end_job();
}

template <typename T>
static inline bool is_finite(T value) {
    if constexpr (std::is_floating_point_v<T> && sizeof(T) == 8) {
        std::uint64_t bits;
        std::memcpy(&bits, &value, sizeof(bits));
        return (bits & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
    } else if constexpr (std::is_floating_point_v<T> && sizeof(T) == 4) {
        std::uint32_t bits;
        std::memcpy(&bits, &value, sizeof(bits));
        return (bits & 0x7f800000U) != 0x7f800000U;
    } else if constexpr (std::is_floating_point_v<T>) {
        return std::isfinite(value);
    } else {
        return true;
    }
}

// Calls row(index, base) once per row of the box: the innermost loop runs over the
// dimension with the smallest stride, element offsets base + x * stride[inner].
template <typename Row>
static void for_each_row(const Box& box, Row&& row) {
    long long index[kMaxDims];
    for (int d = 0; d < box.ndim; ++d) {
        if (box.end[d] < box.begin[d] || box.step[d] <= 0) return;
        index[d] = box.begin[d];
    }
    const int inner = box.order[box.ndim - 1];
    for (;;) {
        long long base = 0;
        for (int d = 0; d < box.ndim; ++d) {
            if (d != inner) base += index[d] * box.stride[d];
        }
        row(index, base);
        int position = box.ndim - 2;
        for (; position >= 0; --position) {
            const int d = box.order[position];
            index[d] += box.step[d];
            if (index[d] <= box.end[d]) break;
            index[d] = box.begin[d];
        }
        if (position < 0) return;
    }
}

// Fast pass: does any point of the box fail? (branch-free rows, so they vectorize)
template <typename T, typename Fails>
static bool any_fails(const T* data, const Box& box, Fails fails) {
    const int inner = box.order[box.ndim - 1];
    const long long first = box.begin[inner], last = box.end[inner];
    const long long step = box.step[inner], stride = box.stride[inner];
    unsigned found = 0;
    for_each_row(box, [&](const long long*, long long base) {
        unsigned any = 0;
        if (step == 1 && stride == 1) {
            const T* row = data + base + first;
            const long long n = last - first + 1;
            for (long long x = 0; x < n; ++x) any |= static_cast<unsigned>(fails(row[x]));
        } else {
            for (long long x = first; x <= last; x += step) any |= static_cast<unsigned>(fails(data[base + x * stride]));
        }
        found |= any;
    });
    return found != 0;
}

// Slow pass, only after a failure: counts failing points and finds the first one.
template <typename T, typename Fails>
static long long find_failures(const T* data, const Box& box, Fails fails, long long* first, double* value,
                               long long* total) {
    const int inner = box.order[box.ndim - 1];
    long long bad = 0;
    *total = 0;
    for_each_row(box, [&](const long long* index, long long base) {
        for (long long x = box.begin[inner]; x <= box.end[inner]; x += box.step[inner]) {
            ++*total;
            const T v = data[base + x * box.stride[inner]];
            if (fails(v)) {
                if (bad == 0) {
                    std::memcpy(first, index, sizeof(long long) * box.ndim);
                    first[inner] = x;
                    *value = static_cast<double>(v);
                }
                ++bad;
            }
        }
    });
    return bad;
}

template <typename T>
static void check_finite(const Kernel& k, long long seq, const char* field, const T* data, const Box& box) {
    auto fails = [](T v) { return !is_finite(v); };
    if (!any_fails(data, box, fails)) return;
    long long first[kMaxDims], total = 0;
    double value = 0.0;
    const long long bad = find_failures(data, box, fails, first, &value, &total);
    char detail[256];
    std::snprintf(detail, sizeof(detail), "%lld of %lld written points are NaN or Inf (first one shown)", bad,
                  total);
    fail(k, seq, "NaN/Inf", field, first, box.ndim, value, detail);
}

template <typename T>
static void check_below(const Kernel& k, long long seq, const char* field, const T* data, const Box& box,
                        double threshold) {
    auto fails = [threshold](T v) { return static_cast<double>(v) < threshold; };
    if (!any_fails(data, box, fails)) return;
    long long first[kMaxDims], total = 0;
    double value = 0.0;
    const long long bad = find_failures(data, box, fails, first, &value, &total);
    char detail[256];
    std::snprintf(detail, sizeof(detail),
                  "%lld of %lld written points are below the threshold %.17g (first one shown)", bad, total,
                  threshold);
    fail(k, seq, "value below threshold", field, first, box.ndim, value, detail);
}

template <typename T>
static void trace(const Kernel& k, long long seq, const char* field, const T* data, const Box& box,
                  const long long* point) {
    long long offset = 0;
    for (int d = 0; d < box.ndim; ++d) {
        const long long p = point[d];
        if (p < box.begin[d] || p > box.end[d] || (p - box.begin[d]) % box.step[d] != 0) return;
        offset += p * box.stride[d];
    }
    char where[256];
    format_index(where, sizeof(where), point, box.ndim);
    char shown[64];
    format_value(shown, sizeof(shown), static_cast<double>(data[offset]));
    std::fprintf(stderr, "%s[orchestra trace] #%lld k%d/%d %s (stencil %s) %s%s = %s\n", rank_prefix(), seq,
                 k.index, k.count, k.label, stencil_of(k), field, where, shown);
    std::fflush(stderr);
}

static void progress(const Kernel& k, long long seq) {
    std::fprintf(stderr, "%s[orchestra progress] %s #%lld k%d/%d %s (stencil %s)\n", rank_prefix(), k.program,
                 seq, k.index, k.count, k.label, stencil_of(k));
    std::fflush(stderr);
}

static void gpu_sync(const Kernel& k, long long seq) {
#if defined(WITH_CUDA)
#if defined(WITH_HIP) || defined(__HIPCC__)
    hipError_t error = hipDeviceSynchronize();
    if (error == hipSuccess) error = hipGetLastError();
    const char* message = error == hipSuccess ? nullptr : hipGetErrorString(error);
#else
    cudaError_t error = cudaDeviceSynchronize();
    if (error == cudaSuccess) error = cudaGetLastError();
    const char* message = error == cudaSuccess ? nullptr : cudaGetErrorString(error);
#endif
    if (message != nullptr) {
        std::fflush(stdout);
        std::fprintf(stderr,
                     "%s[orchestra debug] CHECK FAILED: GPU error\n"
                     "%s  program: %s\n"
                     "%s  kernel:  k%d/%d %s (stencil %s), execution #%lld\n"
                     "%s  state:   %s\n"
                     "%s  error:   %s\n"
                     "%s  ending the job with exit status %d\n",
                     rank_prefix(), rank_prefix(), k.program, rank_prefix(), k.index, k.count, k.label,
                     stencil_of(k), seq, rank_prefix(), k.state, rank_prefix(), message, rank_prefix(), kExitCode);
        std::fflush(stderr);
        end_job();
    }
#else
    (void)k;
    (void)seq;
#endif
}

}  // namespace orchestra_debug
#endif  // ORCHESTRA_DEBUG_RUNTIME
