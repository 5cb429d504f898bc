// One-configuration driver for Nsight Compute on the sm90a GEMM (kdl/gemm_sm90.cuh) beside cuBLASLt: bf16 A row,
// B col, D row at 4096^3 (or the size given), 5 launches of one configuration per process (ncu_sm90.sh profiles
// the fourth). The configurations of docs/perf-notes.md v21:
//   l  cuBLASLt's heuristic choice        c  cooperative 128x256 s4       d  cooperative 128x256 s4, cluster (2, 1)
//   f  cooperative 128x256 s4, (1, 2)    g  cooperative 256x128 s4, (1, 2) (cuBLASLt's tile and cluster at 4096^3)
//   h  cooperative 256x128 s4            p  pingpong 128x128 s6          q  pingpong 128x128 s6, cluster (2, 1)
// Usage: prof_gemm_sm90 MODE [size]
#include "bench_common.cuh"
#include "kdl/gemm_sm90.cuh"

constexpr kdl::Sm90Schedule Coop = kdl::Sm90Schedule::Cooperative, Pp = kdl::Sm90Schedule::Pingpong;
template <int TM, int TN, int S, kdl::Sm90Schedule Sch = Coop, int CM = 1, int CN = 1>
using Sm90 = kdl::GemmSm90<bf16, kdl::RowMajor, bf16, kdl::ColMajor, float, TM, TN, 64, S, Sch, CM, CN, false, 0,
                           kdl::sm90::NoBlockScaling, StoreEpilogue<bf16>>;

template <class G>
static void launches(Bufs& b, int M, int N, int K, int n) {
  kdl::GemmProblem p{M, N, K, 1, b.A, K, 0, b.B, K, 0, 1};
  StoreEpilogue<bf16>::Params ep{b.D, N, 0, 1.f};
  if (const char* why = G::can_implement(p)) { fprintf(stderr, "prof_gemm_sm90: %s\n", why); exit(2); }
  void* ws = nullptr;
  if (size_t w = G::workspace_size(p)) CK(cudaMalloc(&ws, w));
  for (int i = 0; i < n; ++i) CK(G::run(p, ep, ws, 0));
  CK(cudaDeviceSynchronize());
  if (ws) CK(cudaFree(ws));
}

int main(int argc, char** argv) {
  if (argc < 2 || strlen(argv[1]) != 1 || !strchr("lcdfghpq", argv[1][0])) {
    fprintf(stderr, "usage: prof_gemm_sm90 l|c|d|f|g|h|p|q [size]  (the configurations are listed in the source)\n");
    return 2;
  }
  const int S = argc > 2 ? atoi(argv[2]) : 4096, M = S, N = S, K = S;
  if (S < 256) { fprintf(stderr, "prof_gemm_sm90: size %d: at least 256\n", S); return 2; }
  Bufs b = bench_setup({{M, N, K}}, 64u << 20);
  const int n = 5;
  switch (argv[1][0]) {
    case 'l': {
      cublasLtHandle_t lt;
      CKL(cublasLtCreate(&lt));
      const LtBf16Tn cublas(lt, b, 64u << 20, M, N, K);
      for (int i = 0; i < n; ++i) CKL(cublas.run());
      CK(cudaDeviceSynchronize());
      break;
    }
    case 'c': launches<Sm90<128, 256, 4>>(b, M, N, K, n); break;
    case 'd': launches<Sm90<128, 256, 4, Coop, 2, 1>>(b, M, N, K, n); break;
    case 'f': launches<Sm90<128, 256, 4, Coop, 1, 2>>(b, M, N, K, n); break;
    case 'g': launches<Sm90<256, 128, 4, Coop, 1, 2>>(b, M, N, K, n); break;
    case 'h': launches<Sm90<256, 128, 4>>(b, M, N, K, n); break;
    case 'p': launches<Sm90<128, 128, 6, Pp>>(b, M, N, K, n); break;
    case 'q': launches<Sm90<128, 128, 6, Pp, 2, 1>>(b, M, N, K, n); break;
  }
  printf("prof_gemm_sm90 %c %d: %d launches\n", argv[1][0], S, n);
  return 0;
}
