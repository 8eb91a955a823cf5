// The dycore's x-face flux loop (driver/stencils/fluxes.py, bulk of x_face_fluxes) as plain C++,
// compiled as orchestra compiles CPU builds, to find the in-core bound of its instruction mix.
//   g++ -std=c++20 -O3 -march=native -fno-math-errno -ffp-contract=off -fopenmp xflux.cpp -o xflux
//   ./xflux 80 5          # 80 levels from memory
//   ./xflux 80 5 cached   # the same level again and again: every array in cache
// Variants: plain (i outer, `omp simd` over j, as DaCe writes a map), unroll2 (i unrolled by 2),
// jam2 (i unrolled and jammed: two output rows in one j loop, sharing the rows of i-offset reads).
// Results and what they say: docs/performance.md ("Callbacks and sweeps no longer split ...").
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
constexpr int NI = 198, NJ = 198, P = NI * NJ;
static inline double c4(double a, double b, double c, double d) { return (7.0/12.0)*(b+c) - (1.0/12.0)*(a+d); }

struct Level {  // one level of the x-face flux bulk: 5 fields at i-2..i+1, 7 grid fields, 3 outputs
  const double* __restrict__ h; const double* __restrict__ vx; const double* __restrict__ vy;
  const double* __restrict__ vz; const double* __restrict__ b; const double* __restrict__ nx;
  const double* __restrict__ ny; const double* __restrict__ nz; const double* __restrict__ tx;
  const double* __restrict__ ty; const double* __restrict__ tz; const double* __restrict__ len;
  double* __restrict__ mf; double* __restrict__ circ; double* __restrict__ bf;
};

static inline void point(const Level& f, int c) {
  double hf = c4(f.h[c-2*NJ], f.h[c-NJ], f.h[c], f.h[c+NJ]);
  double xf = c4(f.vx[c-2*NJ], f.vx[c-NJ], f.vx[c], f.vx[c+NJ]);
  double yf = c4(f.vy[c-2*NJ], f.vy[c-NJ], f.vy[c], f.vy[c+NJ]);
  double zf = c4(f.vz[c-2*NJ], f.vz[c-NJ], f.vz[c], f.vz[c+NJ]);
  double bb = c4(f.b[c-2*NJ], f.b[c-NJ], f.b[c], f.b[c+NJ]);
  double nv = xf*f.nx[c] + yf*f.ny[c] + zf*f.nz[c];
  double bias = ((f.h[c+NJ] - 3.0*f.h[c]) + 3.0*f.h[c-NJ] - f.h[c-2*NJ]) / 12.0;
  hf = hf + (nv > 0.0 ? bias : -bias);
  f.mf[c] = hf * nv * f.len[c];
  f.circ[c] = (xf*f.tx[c] + yf*f.ty[c] + zf*f.tz[c]) * f.len[c];
  f.bf[c] = bb;
}

// U rows one after the other (U = 1: as DaCe writes a map)
template <int U>
__attribute__((noinline)) void xflux(const Level f) {
  for (int i = 2; i < 194; i += U)
    for (int u = 0; u < U; ++u) {
      #pragma omp simd
      for (int j = 3; j < 195; ++j) point(f, (i + u) * NJ + j);
    }
}

// i unrolled and jammed by 2: both rows in one j loop
__attribute__((noinline)) void xflux_jam(const Level f) {
  for (int i = 2; i < 194; i += 2) {
    #pragma omp simd
    for (int j = 3; j < 195; ++j) { point(f, i * NJ + j); point(f, (i + 1) * NJ + j); }
  }
}

int main(int argc, char** argv) {
  int nk = atoi(argv[1]); int reps = atoi(argv[2]); bool cached = argc > 3;
  std::vector<double*> f3; for (int n = 0; n < 8; ++n) { auto* p = (double*)aligned_alloc(64, sizeof(double)*P*nk); for (long x = 0; x < (long)P*nk; ++x) p[x] = 0.001*(x%977) - 0.3 + n; f3.push_back(p); }
  std::vector<double*> f2; for (int n = 0; n < 7; ++n) { auto* p = (double*)aligned_alloc(64, sizeof(double)*P); for (long x = 0; x < P; ++x) p[x] = 0.002*(x%613) - 0.5; f2.push_back(p); }
  auto run = [&](int which) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) for (int k = 0; k < nk; ++k) {
      long o = cached ? 0 : (long)k * P;
      auto fn = which == 0 ? xflux<1> : which == 1 ? xflux<2> : xflux_jam;
      fn(Level{f3[0]+o, f3[1]+o, f3[2]+o, f3[3]+o, f3[4]+o, f2[0], f2[1], f2[2], f2[3], f2[4], f2[5], f2[6], f3[5]+o, f3[6]+o, f3[7]+o});
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps / nk / (192.0*192.0) * 1e9;
  };
  for (int round = 0; round < 3; ++round) printf("plain %.3f  unroll2 %.3f  jam2 %.3f ns/point\n", run(0), run(1), run(2));
  double s = 0; for (long x = 0; x < (long)P*nk; x += 101) s += f3[5][x] + f3[6][x] + f3[7][x]; printf("%g\n", s);
}
