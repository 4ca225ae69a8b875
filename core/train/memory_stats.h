// Memory accounting for training: peak memory per step on the CPU (resident memory of the
// process) and on CUDA (the caching allocator's peak).
//
//   PeakMemoryMeter meter(device);
//   meter.begin();                 // resets the peaks, records the baseline
//   ... one training step ...
//   StepMemory m = meter.end();    // m.host_peak_bytes, m.device_peak_bytes
//
// CPU numbers are the process's resident set (Linux /proc/self/status VmRSS / VmHWM). The
// peak is reset through /proc/self/clear_refs ("5", Linux >= 4.0); where that is not
// possible the peak is the process's lifetime peak (getrusage ru_maxrss) and
// StepMemory::host_peak_since_begin is false. Resident memory includes what the allocator
// keeps after a free, so a per-step peak is an upper bound on the step's live memory, and
// only a fresh process gives a clean comparison between two methods.
// CUDA numbers exist only when LibTorch was built with CUDA (MNEMO_TORCH_CUDA); otherwise
// device fields are -1.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace mnemo {

struct HostMemory {
  int64_t rss_bytes = 0;       // VmRSS now (0 where unknown)
  int64_t peak_rss_bytes = 0;  // VmHWM, else ru_maxrss
};
HostMemory host_memory();
// Resets the process's resident-memory peak to the current resident size. False where the
// kernel does not allow it.
bool reset_host_peak();

struct CudaMemory {
  bool available = false;  // false: built without CUDA, or no such device
  int64_t allocated_bytes = -1, peak_allocated_bytes = -1;  // live tensors
  int64_t reserved_bytes = -1, peak_reserved_bytes = -1;    // held by the caching allocator
};
// Caching-allocator statistics of CUDA device `index`.
CudaMemory cuda_memory(int index);
// Resets the allocator's peak statistics of device `index` (no-op without CUDA).
void reset_cuda_peak(int index);

struct StepMemory {
  int64_t host_baseline_bytes = 0;  // resident memory at begin()
  int64_t host_peak_bytes = 0;      // peak resident memory since begin() (see host_peak_since_begin)
  bool host_peak_since_begin = false;
  int64_t device_baseline_bytes = -1;      // CUDA: allocated bytes at begin(); -1 on CPU
  int64_t device_peak_bytes = -1;          // CUDA: peak allocated bytes since begin()
  int64_t device_peak_reserved_bytes = -1;  // CUDA: peak reserved bytes since begin()
  // The step's own peak above what was resident/allocated before it.
  int64_t host_step_bytes() const { return host_peak_bytes - host_baseline_bytes; }
  int64_t device_step_bytes() const { return device_peak_bytes < 0 ? -1 : device_peak_bytes - device_baseline_bytes; }
};

// Measures the peak memory of a span of work (a training step) on `device`; the host side
// is always measured. Not thread-safe; peaks are process-wide (other threads count too).
class PeakMemoryMeter {
 public:
  explicit PeakMemoryMeter(torch::Device device = torch::kCPU) : device_(device) {}
  void begin();
  StepMemory end() const;

 private:
  torch::Device device_;
  StepMemory start_;
};

// "12.3 MiB"-style rendering for logs and tables.
std::string format_bytes(int64_t bytes);

}  // namespace mnemo
