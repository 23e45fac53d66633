// Hopper bulk copies (the TMA unit's 1-D form) from global into shared memory, completed on a
// shared-memory mbarrier: one instruction moves up to a whole weight row (a multiple of 16 bytes,
// both ends 16-byte aligned) without registers or per-lane requests. Usage: one thread inits a
// barrier (count 1), FenceBarrierInit(); the issuing thread calls MbarExpectTx(bar, bytes) then
// BulkCopyG2S(...) for those bytes; readers MbarWait(bar, phase) (phase = uses so far & 1), read
// with ordinary shared loads, and before the stage is refilled FenceProxyAsync() orders their
// reads before the copy's writes. Compiled for sm_90 only (FORGE builds sm_90a).
#pragma once

#include <cstdint>

namespace forge::cuda {

__device__ __forceinline__ void MbarInit(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void FenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void FenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Arrives on `bar` (this thread's one arrival) expecting `bytes` more from bulk copies.
__device__ __forceinline__ void MbarExpectTx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

// Waits until the barrier's phase `parity` has completed.
__device__ __forceinline__ void MbarWait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// bytes (a multiple of 16) from global src to shared dst (both 16-byte aligned), counted on bar.
__device__ __forceinline__ void BulkCopyG2S(uint32_t dst, const void* src, uint32_t bytes,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

// As BulkCopyG2S, with an L2 cache policy (e.g. CreatePolicyEvictFirst()).
__device__ __forceinline__ void BulkCopyG2S(uint32_t dst, const void* src, uint32_t bytes,
                                            uint32_t bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], "
      "[%1], %2, [%3], %4;" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "l"(policy)
      : "memory");
}

// An L2 policy for lines read once a decode step (weights, K/V): they are the first to leave, so
// what the step reads again (activations, the kernels' code) stays in L2.
__device__ __forceinline__ uint64_t CreatePolicyEvictFirst() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

}  // namespace forge::cuda
