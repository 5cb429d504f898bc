#include "tests/gpu/harness.h"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

namespace kdl::gputest {

bool KernelLibrary::open(const std::string& path, std::string& error) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* e = dlerror();
    error = e ? e : "dlopen failed";
    return false;
  }
  return true;
}

KernelEntry KernelLibrary::lookup(const std::string& kernel, std::string& missing) const {
  KernelEntry k;
  k.name = kernel;
  missing.clear();
  auto sym = [&](const char* suffix) -> void* {
    const std::string s = "kdl_" + kernel + "_" + suffix;
    void* p = handle_ ? dlsym(handle_, s.c_str()) : nullptr;
    if (!p) missing += (missing.empty() ? "" : ", ") + s;
    return p;
  };
  k.info = reinterpret_cast<decltype(k.info)>(sym("info"));
  k.canImplement = reinterpret_cast<decltype(k.canImplement)>(sym("can_implement"));
  k.workspaceSize = reinterpret_cast<decltype(k.workspaceSize)>(sym("workspace_size"));
  k.run = reinterpret_cast<decltype(k.run)>(sym("run"));
  if (handle_) k.path = reinterpret_cast<decltype(k.path)>(dlsym(handle_, ("kdl_" + kernel + "_path").c_str()));
  return k;
}

void* KernelLibrary::symbol(const std::string& name) const { return handle_ ? dlsym(handle_, name.c_str()) : nullptr; }

bool waitIdle(double seconds) {
  cudaEvent_t ev;
  KDL_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  KDL_CUDA_CHECK(cudaEventRecord(ev, 0));
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) KDL_CUDA_CHECK(e);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  KDL_CUDA_CHECK(cudaEventDestroy(ev));
  KDL_CUDA_CHECK(cudaGetLastError());
  return true;
}

void* deviceAllocFilled(size_t bytes, int pattern) {
  void* p = nullptr;
  KDL_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 16));
  KDL_CUDA_CHECK(cudaMemset(p, pattern, bytes ? bytes : 16));
  return p;
}

// ---- cuBLASLt --------------------------------------------------------------------------------------

namespace {
cudaDataType_t cudaTypeOf(DType t) {
  switch (t) {
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
    case DType::F32: case DType::TF32: return CUDA_R_32F;
    case DType::S8: return CUDA_R_8I;
    case DType::S32: return CUDA_R_32I;
    case DType::E4M3: return CUDA_R_8F_E4M3;
    case DType::E5M2: return CUDA_R_8F_E5M2;
    default: return CUDA_R_32F;
  }
}

// cuBLAS is column-major: the row-major M x N result is the column-major N x M matrix
// D' = op(A') op(B') with A' the KDL B operand and B' the KDL A operand (see the header).
struct Operands {
  cublasOperation_t opA, opB;
  uint64_t rowsA, colsA, rowsB, colsB;
};
Operands mapOperands(Layout la, Layout lb, int64_t M, int64_t N, int64_t K) {
  Operands o;
  // A' <- KDL B (K x N). B col: stored column-major K x N -> op T. B row: stored column-major N x K -> op N.
  if (lb == Layout::Col) { o.opA = CUBLAS_OP_T; o.rowsA = K; o.colsA = N; }
  else { o.opA = CUBLAS_OP_N; o.rowsA = N; o.colsA = K; }
  // B' <- KDL A (M x K). A row: stored column-major K x M -> op N. A col: stored column-major M x K -> op T.
  if (la == Layout::Row) { o.opB = CUBLAS_OP_N; o.rowsB = K; o.colsB = M; }
  else { o.opB = CUBLAS_OP_T; o.rowsB = M; o.colsB = K; }
  return o;
}

std::string algoDescription(const cublasLtMatmulAlgo_t& algo) {
  int id = 0, tile = 0, stages = 0, splitk = 0;
  size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof(splitk), &w);
  std::ostringstream t;
  t << "algo=" << id << " tile=" << tile << " stages=" << stages << " splitk=" << splitk;
  return t.str();
}
}  // namespace

struct CublasLt::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
  std::string text;
};

CublasLt::CublasLt() {
  KDL_CUBLAS_CHECK(cublasLtCreate(&handle_));
  KDL_CUDA_CHECK(cudaMalloc(&workspace_, workspaceBytes_));
}

CublasLt::~CublasLt() {
  for (auto& kv : plans_) {
    Plan* p = kv.second;
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->c) cublasLtMatrixLayoutDestroy(p->c);
    delete p;
  }
  cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

void CublasLt::matmul(DType in, const void* A, Layout la, int64_t lda, int64_t strideA, const void* B, Layout lb,
                      int64_t ldb, int64_t strideB, void* out, int64_t M, int64_t N, int64_t K, int64_t batch,
                      bool fastTf32, cudaStream_t stream) {
  const bool integer = in == DType::S8;
  const cublasComputeType_t compute =
      integer ? CUBLAS_COMPUTE_32I : (fastTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  const cudaDataType_t scaleType = integer ? CUDA_R_32I : CUDA_R_32F;
  const cudaDataType_t outType = integer ? CUDA_R_32I : CUDA_R_32F;
  const Operands o = mapOperands(la, lb, M, N, K);

  cublasLtMatmulDesc_t op;
  KDL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, compute, scaleType));
  KDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &o.opA, sizeof(o.opA)));
  KDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &o.opB, sizeof(o.opB)));
  cublasLtMatrixLayout_t la_, lb_, lc_;
  KDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la_, cudaTypeOf(in), o.rowsA, o.colsA, ldb));
  KDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb_, cudaTypeOf(in), o.rowsB, o.colsB, lda));
  KDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc_, outType, N, M, N));
  if (batch > 1) {
    const int32_t bc = (int32_t)batch;
    const int64_t sc = M * N;
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(la_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(lb_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(lc_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(la_, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strideB, sizeof(strideB)));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(lb_, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strideA, sizeof(strideA)));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(lc_, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc, sizeof(sc)));
  }
  cublasLtMatmulPreference_t pref;
  KDL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  KDL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &workspaceBytes_, sizeof(workspaceBytes_)));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  KDL_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, op, la_, lb_, lc_, lc_, pref, 1, &heur, &found));
  if (found == 0) {
    std::fprintf(stderr, "FATAL: cuBLASLt has no algorithm for the reference matmul\n");
    std::exit(3);
  }
  const float alphaF = 1.f, betaF = 0.f;
  const int32_t alphaI = 1, betaI = 0;
  const void* alpha = integer ? (const void*)&alphaI : (const void*)&alphaF;
  const void* beta = integer ? (const void*)&betaI : (const void*)&betaF;
  KDL_CUBLAS_CHECK(cublasLtMatmul(handle_, op, alpha, B, la_, A, lb_, beta, out, lc_, out, lc_, &heur.algo,
                                  workspace_, workspaceBytes_, stream));
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la_);
  cublasLtMatrixLayoutDestroy(lb_);
  cublasLtMatrixLayoutDestroy(lc_);
  cublasLtMatmulDescDestroy(op);
}

bool CublasLt::choose(Plan* plan, const cublasLtMatmulHeuristicResult_t* heur, int found, const void* A, const void* B,
                      void* D, cudaStream_t stream) {
  if (found <= 0) return false;
  if (found == 1) {
    plan->algo = heur[0].algo;
    plan->text = algoDescription(heur[0].algo);
    return true;
  }
  const float alpha = 1.f, beta = 0.f;
  cudaEvent_t e0, e1;
  KDL_CUDA_CHECK(cudaEventCreate(&e0));
  KDL_CUDA_CHECK(cudaEventCreate(&e1));
  int best = -1;
  float bestMs = 0.f;
  for (int i = 0; i < found; ++i) {
    auto run = [&] {
      return cublasLtMatmul(handle_, plan->op, &alpha, B, plan->a, A, plan->b, &beta, D, plan->c, D, plan->c,
                            &heur[i].algo, workspace_, workspaceBytes_, stream) == CUBLAS_STATUS_SUCCESS;
    };
    bool ok = true;
    for (int w = 0; w < 3 && ok; ++w) ok = run();
    KDL_CUDA_CHECK(cudaEventRecord(e0, stream));
    for (int r = 0; r < 10 && ok; ++r) ok = run();
    KDL_CUDA_CHECK(cudaEventRecord(e1, stream));
    KDL_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0.f;
    KDL_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (ok && (best < 0 || ms < bestMs)) {
      best = i;
      bestMs = ms;
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  if (best < 0) return false;
  plan->algo = heur[best].algo;
  plan->text = algoDescription(heur[best].algo) + " (heuristic #" + std::to_string(best + 1) + ", the fastest of " +
               std::to_string(found) + " timed)";
  return true;
}

bool CublasLt::matmulOut(DType in, DType out, const void* A, Layout la, int64_t lda, const void* B, Layout lb,
                         int64_t ldb, void* D, int64_t M, int64_t N, int64_t K, cudaStream_t stream,
                         std::string* algoText) {
  std::ostringstream key;
  key << (int)in << ',' << (int)out << ',' << (int)la << ',' << (int)lb << ',' << lda << ',' << ldb << ',' << M
      << ',' << N << ',' << K;
  Plan*& plan = plans_[key.str()];
  if (!plan) {
    plan = new Plan;
    const Operands o = mapOperands(la, lb, M, N, K);
    KDL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    KDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &o.opA, sizeof(o.opA)));
    KDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &o.opB, sizeof(o.opB)));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a, cudaTypeOf(in), o.rowsA, o.colsA, ldb));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b, cudaTypeOf(in), o.rowsB, o.colsB, lda));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->c, cudaTypeOf(out), N, M, N));
    cublasLtMatmulPreference_t pref;
    KDL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    KDL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                          &workspaceBytes_, sizeof(workspaceBytes_)));
    std::vector<cublasLtMatmulHeuristicResult_t> heur(candidates_);
    int found = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle_, plan->op, plan->a, plan->b, plan->c, plan->c, pref,
                                                            candidates_, heur.data(), &found);
    cublasLtMatmulPreferenceDestroy(pref);
    plan->ok = s == CUBLAS_STATUS_SUCCESS && choose(plan, heur.data(), found, A, B, D, stream);
  }
  if (algoText) *algoText = plan->text;
  if (!plan->ok) return false;
  const float alpha = 1.f, beta = 0.f;
  KDL_CUBLAS_CHECK(cublasLtMatmul(handle_, plan->op, &alpha, B, plan->a, A, plan->b, &beta, D, plan->c, D, plan->c,
                                  &plan->algo, workspace_, workspaceBytes_, stream));
  return true;
}

bool CublasLt::matmulFp8(DType inA, DType inB, const void* A, int64_t lda, const void* B, int64_t ldb, void* D,
                         int64_t M, int64_t N, int64_t K, const float* scaleA, const float* scaleB, bool fastAccum,
                         bool blockScales, cudaStream_t stream, std::string* algoText) {
  std::ostringstream key;
  key << "fp8," << (int)inA << ',' << (int)inB << ',' << lda << ',' << ldb << ',' << M << ',' << N << ',' << K << ','
      << fastAccum << ',' << blockScales << ',' << (const void*)scaleA << ',' << (const void*)scaleB;
  Plan*& plan = plans_[key.str()];
  if (!plan) {
    plan = new Plan;
    // cuBLAS's A' is our B (column-major K x N: op T), its B' our A (row-major M x K: op N); see mapOperands.
    const Operands o = mapOperands(Layout::Row, Layout::Col, M, N, K);
    KDL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    KDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &o.opA, sizeof(o.opA)));
    KDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &o.opB, sizeof(o.opB)));
    const int8_t fast = fastAccum ? 1 : 0;
    KDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
    bool ok = true;
    if (blockScales) {
      const int32_t modeA = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;  // cuBLAS A' = our B
      const int32_t modeB = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;      // cuBLAS B' = our A
      ok = cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &modeA, sizeof(modeA)) ==
               CUBLAS_STATUS_SUCCESS &&
           cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &modeB, sizeof(modeB)) ==
               CUBLAS_STATUS_SUCCESS;
    }
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a, cudaTypeOf(inB), o.rowsA, o.colsA, ldb));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b, cudaTypeOf(inA), o.rowsB, o.colsB, lda));
    KDL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->c, CUDA_R_16BF, N, M, N));
    if (ok) {
      // The scale pointers are part of the descriptor: set before the heuristic, kept per plan.
      KDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scaleB, sizeof(scaleB)));
      KDL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scaleA, sizeof(scaleA)));
      cublasLtMatmulPreference_t pref;
      KDL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
      KDL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &workspaceBytes_, sizeof(workspaceBytes_)));
      std::vector<cublasLtMatmulHeuristicResult_t> heur(candidates_);
      int found = 0;
      const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, plan->op, plan->a, plan->b, plan->c, plan->c,
                                                               pref, candidates_, heur.data(), &found);
      cublasLtMatmulPreferenceDestroy(pref);
      plan->ok = st == CUBLAS_STATUS_SUCCESS && choose(plan, heur.data(), found, A, B, D, stream);
      if (plan->ok) {
        plan->text += std::string(fastAccum ? " fast-accum" : " no-fast-accum") +
                      (blockScales ? " VEC128(A)/BLK128x128(B)" : "");
      } else {
        plan->text = "no algorithm (status " + std::to_string((int)st) + ")";
      }
    } else {
      plan->text = "scale modes not accepted";
    }
  }
  if (algoText) *algoText = plan->text;
  if (!plan->ok) return false;
  const float alpha = 1.f, beta = 0.f;
  // The scale pointers are fixed in the plan's descriptor: callers keep them for the plan's life.
  KDL_CUBLAS_CHECK(cublasLtMatmul(handle_, plan->op, &alpha, B, plan->a, A, plan->b, &beta, D, plan->c, D, plan->c,
                                  &plan->algo, workspace_, workspaceBytes_, stream));
  return true;
}

std::string fmtDouble(double v, int prec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", prec, v);
  return buf;
}

DType parseDType(const std::string& s, bool* ok) {
  static const std::pair<const char*, DType> table[] = {
      {"f16", DType::F16}, {"bf16", DType::BF16}, {"f32", DType::F32}, {"tf32", DType::TF32},
      {"f64", DType::F64}, {"e4m3", DType::E4M3}, {"e5m2", DType::E5M2}, {"s8", DType::S8},
      {"u8", DType::U8},   {"s32", DType::S32}};
  for (const auto& [n, t] : table)
    if (s == n) {
      if (ok) *ok = true;
      return t;
    }
  if (ok) *ok = false;
  return DType::F32;
}

}  // namespace kdl::gputest
