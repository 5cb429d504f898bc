// kdl/ptx_sm90.cuh -- the one set of Hopper (sm_90) PTX helpers: mbarriers, TMA, clusters.
//
// Shared by every template that feeds shared memory with TMA (gemm_sm80_tma.cuh, the sm90a
// templates), so each instruction is spelled once. Each helper names the step of the pipeline
// it performs; barriers are `uint64_t*` into shared memory, tensor maps are `const CUtensorMap*`
// (a __grid_constant__ kernel parameter or global memory), shared-memory tiles are generic
// pointers into shared memory. (A pointer made with __cvta_shared_to_generic from a 32-bit
// shared address costs nothing: CCCL's conversion back folds away; one made by offsetting a
// generic pointer may leave an add/subtract of the window base per use.)
//
// Where the instructions come from:
//   CCCL (<cuda/ptx>, CUDA 13.0 ships CCCL 3.0):
//     mbarrier.init, mbarrier.arrive, mbarrier.arrive.expect_tx, mbarrier.try_wait.parity,
//     fence.mbarrier_init, fence.proxy.async, cp.async.bulk.tensor (2-D/3-D loads, their
//     multicast form, 2-D/3-D stores), cp.async.bulk.commit_group / wait_group[.read],
//     barrier.cluster.arrive / wait, %cluster_ctarank, getctarank.
//   CUDA's own device builtins: mapa (__cluster_map_shared_rank; CCCL 3.0 has no mapa); griddepcontrol
//     (cudaGridDependencySynchronize, cudaTriggerProgrammaticLaunchCompletion).
//   Inline PTX: prefetch.tensormap and prefetch.global.L2 (CCCL 3.0 has no wrapper for them); a remote mbarrier arrival
//     with release at CTA scope (CCCL 3.0 has the cluster-scope one only); named barriers
//     (bar.sync / bar.arrive with a thread count).
//
// The header compiles for every architecture; below sm_90 the bodies are empty (CCCL's
// wrappers would otherwise leave an unresolved "not supported before SM_90" call), so sm_80
// code may include it but must not rely on it. The multicast loads need sm_90a (or sm_100a):
// called from code built for plain sm_90, CCCL's wrapper fails to link, on purpose.
#pragma once
#include <cuda.h>  // CUtensorMap (a type only; nothing here links against libcuda)
#include <stdint.h>

#include <cuda/ptx>

namespace kdl {
namespace sm90 {

// ---------------------------------------------------- programmatic dependent launch ----
// A kernel launched with cudaLaunchAttributeProgrammaticStreamSerialization may start while the kernel before it
// in the stream still runs (its CTAs take SMs as the earlier kernel's leave). griddep_wait blocks until every
// prerequisite grid has completed and its memory operations are visible: a kernel so launched calls it before its
// first access to global memory. griddep_launch_dependents lets the next such kernel in the stream start early (it
// still waits for this grid's completion in its own griddep_wait); without it the next kernel launches as this grid's
// CTAs exit. GemmSm90 does not call it: every explicit trigger measured slower on its pingpong kernels
// (docs/perf-notes.md v55, v56). Both are no-ops for a kernel launched without the attribute. CUDA's device builtins
// (griddepcontrol.wait / .launch_dependents).
__device__ __forceinline__ void griddep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}
__device__ __forceinline__ void griddep_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// Waits about `cycles` SM cycles (clock64), sleeping between reads of the clock instead of spinning, so that the
// waiting warp leaves its scheduler's issue slots to the others. (GemmSm90's paced pingpong epilogue.)
__device__ __forceinline__ void sleep_cycles(int cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) __nanosleep(32);
}

// ---------------------------------------------------------------- mbarriers ----
// A stage's "full" barrier counts the producer's arrival plus the bytes TMA delivers
// (expect_tx); its "empty" barrier counts the consumers that have finished reading the stage.
// Waits use the parity of the phase: a barrier's phase k completes with parity k & 1.

// Sets the barrier's expected arrival count for each phase (one thread, before any use).
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrivals) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::mbarrier_init(bar, arrivals);
#endif
}

// Makes the initialised barriers visible to the async proxy (TMA) and to the cluster's other
// CTAs; follow it with a CTA (or cluster) barrier before any thread uses them.
__device__ __forceinline__ void fence_mbarrier_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
#endif
}

// One arrival on a barrier of this CTA (release, CTA scope).
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  (void)cuda::ptx::mbarrier_arrive(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar);
#endif
}

// The producer's arrival on a stage's full barrier, announcing the bytes its TMA loads will
// deliver to it; the phase completes when they have all landed.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             bar, bytes);
#endif
}

// Blocks until the barrier's phase with this parity has completed. try_wait suspends the thread
// until the phase completes or a time limit passes; with the limit given (suspendTimeHint) instead
// of the system's, the waiting warps poll less: +0.5-1 % on the cooperative GEMMs, +1-4 % on
// pingpong at 4096^3 and 8192x1024x8192 on the H100, the same for any hint from 10 us to 100 ms
// (docs/perf-notes.md v20). A completed phase still wakes the thread at once.
constexpr uint32_t kMbarrierSuspendHintNs = 1000000;
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t hint = kMbarrierSuspendHintNs;  // a copy: CCCL takes it by reference (no ODR-use in device code)
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity, hint)) {
  }
#endif
}

// ------------------------------------------------------------------- fences ----
// Orders this thread's generic-proxy writes to CTA shared memory before later async-proxy
// accesses (a TMA store reading the tile, a TMA load overwriting it).
__device__ __forceinline__ void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
#endif
}

// An arrival on `bar` once all of this thread's earlier cp.async copies have landed. `.noinc`: the
// arrival is one of those the barrier was initialised to expect (mbarrier_init counts it). Inline
// PTX: CCCL 3.0 has no wrapper for it.
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(
                   static_cast<uint32_t>(__cvta_generic_to_shared(bar)))
               : "memory");
#endif
}

// A 4-byte load from CTA shared memory at `addr` (a shared-window address). volatile: it stays after
// the mbarrier wait that makes the data visible (the wait is volatile asm too, and the compiler keeps
// volatile asm statements in order).
__device__ __forceinline__ float ld_shared_f32(uint32_t addr) {
  float v = 0.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
#endif
  return v;
}

// ---------------------------------------------------------------------- TMA ----
// Coordinates are in elements, innermost dimension first (c0 = the contiguous one). Loads
// write CTA shared memory (a shared::cta address is a valid shared::cluster destination) and
// complete on `bar` of the same CTA; out-of-range elements are zero-filled.

// Pulls the tensor map's descriptor into the cache ahead of the first load that uses it.
// Inline PTX: CCCL 3.0 has no prefetch.tensormap wrapper.
__device__ __forceinline__ void tma_prefetch(const CUtensorMap* map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
#endif
}

// Asks for the 128-byte line holding addr in L2 (an epilogue's source tile a k-loop ahead). A hint: it moves nothing
// into registers. Inline PTX: CCCL 3.0 has no prefetch wrapper.
__device__ __forceinline__ void prefetch_l2(const void* addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(addr));
#endif
}

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int32_t coords[2] = {c0, c1};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar);
#endif
}

__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1, int c2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int32_t coords[3] = {c0, c1, c2};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar);
#endif
}

// One load delivered to the same shared-memory offset, and completing on the same barrier
// offset, in every CTA of the cluster whose bit is set in `cta_mask` (bit i = cluster rank i).
// sm_90a only.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                                      uint16_t cta_mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int32_t coords[2] = {c0, c1};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar, cta_mask);
#endif
}

__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                                      int c2, uint16_t cta_mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int32_t coords[3] = {c0, c1, c2};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar, cta_mask);
#endif
}

__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1, int c2,
                                            int c3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, map, coords, bar);
#endif
}

// Stores a CTA shared-memory tile to global memory (out-of-range elements are not written).
// Issue after fence_proxy_async_shared() has ordered the writes that filled the tile; group
// the stores with tma_store_commit() and reuse the tile after tma_store_wait_read<N>().
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c0, int c1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int32_t coords[2] = {c0, c1};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, coords, src);
#endif
}

__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, const void* src, int c0, int c1, int c2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int32_t coords[3] = {c0, c1, c2};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, coords, src);
#endif
}

__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, const void* src, int c0, int c1, int c2, int c3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int32_t coords[4] = {c0, c1, c2, c3};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, coords, src);
#endif
}

// Closes the group of TMA stores this thread has issued since the last commit.
__device__ __forceinline__ void tma_store_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::cp_async_bulk_commit_group();
#endif
}

// Waits until at most `Pending` committed store groups of this thread still read their
// shared-memory source: the tiles of the others may be overwritten.
template <int Pending>
__device__ __forceinline__ void tma_store_wait_read() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<Pending>{});
#endif
}

// Waits until at most `Pending` committed store groups of this thread are incomplete: the
// others' writes to global memory are done (e.g. before the kernel's last instruction).
template <int Pending>
__device__ __forceinline__ void tma_store_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<Pending>{});
#endif
}

// ------------------------------------------------------------ named barriers ----
// A CTA barrier among `threads` threads (a multiple of 32) on hardware barrier `id` (1..15; 0 is
// __syncthreads'): some threads arrive without waiting, the others wait (sync) until `threads`
// arrivals, their own included, have been counted. Orders work between warpgroups, e.g. the
// pingpong schedule's "the other consumer has issued its mainloop". Inline PTX: CCCL 3.0 has no
// bar.sync / bar.arrive wrapper.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}

__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}

// ----------------------------------------------------------------- clusters ----
// This CTA's rank in its cluster (0 .. cluster size - 1): the bit it owns in a multicast mask.
__device__ __forceinline__ uint32_t cluster_cta_rank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return cuda::ptx::get_sreg_cluster_ctarank();
#else
  return 0;
#endif
}

// The rank of the CTA whose shared memory holds `p` (a pointer into the cluster's shared memory).
__device__ __forceinline__ uint32_t cluster_cta_rank_of(const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return cuda::ptx::getctarank(cuda::ptx::space_cluster, p);
#else
  (void)p;
  return 0;
#endif
}

// The same shared-memory location as `p` (a pointer into this CTA's shared memory) in the CTA
// of rank `cta_rank` of the cluster (mapa, through CUDA's builtin: CCCL 3.0 has no mapa).
template <class T>
__device__ __forceinline__ T* cluster_peer(T* p, uint32_t cta_rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return static_cast<T*>(__cluster_map_shared_rank(p, cta_rank));
#else
  (void)cta_rank;
  return p;
#endif
}

// One arrival on the barrier at `bar`'s offset in the CTA of rank `cta_rank` (which may be
// this one): a consumer releasing a stage that a peer's multicast load fills (release, cluster
// scope).
__device__ __forceinline__ void mbarrier_arrive_cluster(uint64_t* bar, uint32_t cta_rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::mbarrier_arrive(cuda::ptx::sem_release, cuda::ptx::scope_cluster, cuda::ptx::space_cluster,
                             cluster_peer(bar, cta_rank));
#else
  (void)bar;
  (void)cta_rank;
#endif
}

// The same arrival with release at CTA scope only (CUTLASS's ClusterBarrier::arrive(cta_id, pred)):
// for a consumer that only read the stage, its reads completed (wgmma.wait_group) before it
// arrives, and publishes nothing the peer reads. The cluster-scope release above costs a
// cluster-wide fence per arrival: GemmSm90 with 2-CTA clusters ran at 0.2-0.4x of its speed
// without clusters when its consumers released stages with it. Inline PTX: CCCL 3.0 offers
// shared::cluster arrivals at cluster scope only.
__device__ __forceinline__ void mbarrier_arrive_cluster_cta_scope(uint64_t* bar, uint32_t cta_rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cta.shared::cluster.b64 _, [remote];\n}\n" ::"r"(
          static_cast<uint32_t>(__cvta_generic_to_shared(bar))),
      "r"(cta_rank)
      : "memory");
#else
  (void)bar;
  (void)cta_rank;
#endif
}

// The cluster-wide barrier in its two halves: every thread of every CTA arrives (release:
// its earlier writes, shared memory included, become visible to the cluster) and later waits
// (acquire) for all the others' arrivals. Used after fence_mbarrier_init() and before a CTA
// exits while peers may still write to its shared memory.
__device__ __forceinline__ void cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
#endif
}

// The arrival without release semantics, for a point that publishes no memory writes.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_relaxed);
#endif
}

__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
#endif
}

__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

}  // namespace sm90
}  // namespace kdl
