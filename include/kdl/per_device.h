// kdl/per_device.h -- host-side set-up done once per CUDA device, safely from many host threads.
//
// Some launch set-up is a property of the device, not of the process: the dynamic shared-memory
// opt-in of a kernel (cudaFuncSetAttribute acts on the current device only) and whether the image
// loaded for a device has a kernel's sm_90 code. A function-local `static bool` would do it for the
// first device only (a kernel that ran on device 0 then fails on device 1) and races between host
// threads. These tables hold one state per device ordinal.
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <mutex>

#include "kdl/split_k.h"  // tensor_flops_per_clock_per_sm, tensor_ridge

namespace kdl {

// The current device's ordinal, or -1 (and the CUDA error cleared) when there is none.
inline int current_device() {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return dev;
}

// Runs a set-up step once per device until it succeeds: later calls for that device return
// cudaSuccess without running it; a failure is returned and the next call tries again. Concurrent
// first calls for one device run it once (the others wait). Devices beyond kMaxDevices (or -1) run
// it on every call: correct, only slower.
class PerDeviceOnce {
 public:
  static constexpr int kMaxDevices = 64;

  template <class SetUp>
  cudaError_t run(int dev, SetUp&& set_up) {
    if (dev < 0 || dev >= kMaxDevices) return set_up();
    if (done_[dev].load(std::memory_order_acquire)) return cudaSuccess;
    std::lock_guard<std::mutex> lock(mu_);
    if (done_[dev].load(std::memory_order_relaxed)) return cudaSuccess;
    const cudaError_t e = set_up();
    if (e == cudaSuccess) done_[dev].store(true, std::memory_order_release);
    return e;
  }

 private:
  std::mutex mu_;
  std::atomic<bool> done_[kMaxDevices] = {};
};

// A yes/no answer about a device, computed by the first caller for that device and kept (both
// answers). Same threading and range rules as PerDeviceOnce.
class PerDeviceAnswer {
 public:
  static constexpr int kMaxDevices = PerDeviceOnce::kMaxDevices;

  template <class Ask>
  bool get(int dev, Ask&& ask) {
    if (dev < 0 || dev >= kMaxDevices) return ask();
    int s = state_[dev].load(std::memory_order_acquire);
    if (s != kUnknown) return s == kYes;
    std::lock_guard<std::mutex> lock(mu_);
    s = state_[dev].load(std::memory_order_relaxed);
    if (s == kUnknown) {
      s = ask() ? kYes : kNo;
      state_[dev].store(s, std::memory_order_release);
    }
    return s == kYes;
  }

 private:
  enum : int { kUnknown = 0, kYes = 1, kNo = 2 };
  std::mutex mu_;
  std::atomic<int> state_[kMaxDevices] = {};
};

// A number about a device, computed by the first caller for that device that gets one and kept (0, a
// failure, is asked again next time; a negative answer is kept like a positive one). Same threading
// and range rules as PerDeviceOnce.
class PerDeviceCount {
 public:
  static constexpr int kMaxDevices = PerDeviceOnce::kMaxDevices;

  template <class Ask>
  long long get(int dev, Ask&& ask) {
    if (dev < 0 || dev >= kMaxDevices) return ask();
    if (const long long v = value_[dev].load(std::memory_order_acquire)) return v;
    const long long v = ask();
    if (v != 0) value_[dev].store(v, std::memory_order_release);  // the same answer from any racing caller
    return v;
  }

 private:
  std::atomic<long long> value_[kMaxDevices] = {};
};

// How many CTAs of `kernel` (threads, dynamic shared memory) the current device holds at once, at least 1;
// 1 when there is no device. Asked once per device (`known`: one per kernel). For kdl/split_k.h's wave count.
template <class Kernel>
inline long long resident_ctas_on_device(PerDeviceCount& known, Kernel kernel, int threads, size_t smem) {
  const int dev = current_device();
  if (dev < 0) return 1;
  const long long n = known.get(dev, [&]() -> long long {
    int sms = 0, per_sm = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess) {
      cudaGetLastError();
      per_sm = 1;
    }
    return (long long)sms * (per_sm > 0 ? per_sm : 1);
  });
  return n > 0 ? n : 1;
}

// The current device's tensor FLOP/s over its DRAM bytes/s for an MMA (kdl/split_k.h's
// SplitKMemory::ridge), from its compute capability, SM count, clock, memory clock and bus width;
// 0 when there is no device or its rates are not known here. Asked once per device (`known`: one per
// MMA kind; kept in thousandths).
inline double tensor_ridge_on_device(PerDeviceCount& known, bool wgmma, int operand_bits) {
  const int dev = current_device();
  if (dev < 0) return 0;
  const long long milli = known.get(dev, [&]() -> long long {
    int major = 0, minor = 0, sms = 0, clock = 0, mem_clock = 0, bus = 0;
    const cudaDeviceAttr attrs[] = {cudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMinor,
                                    cudaDevAttrMultiProcessorCount, cudaDevAttrClockRate, cudaDevAttrMemoryClockRate,
                                    cudaDevAttrGlobalMemoryBusWidth};
    int* values[] = {&major, &minor, &sms, &clock, &mem_clock, &bus};
    for (int i = 0; i < 6; ++i)
      if (cudaDeviceGetAttribute(values[i], attrs[i], dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
      }
    const double ridge = tensor_ridge(tensor_flops_per_clock_per_sm(major, minor, wgmma, operand_bits), sms, clock,
                                      mem_clock, bus);
    return ridge > 0 ? (long long)(ridge * 1000.0) : -1;  // -1: rates not known here (kept)
  });
  return milli > 0 ? double(milli) / 1000.0 : 0;
}

}  // namespace kdl
