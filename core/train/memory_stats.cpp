#include "core/train/memory_stats.h"

#if defined(MNEMO_TORCH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>

#include "core/nn/torch_compat.h"
#endif

#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>

namespace mnemo {

namespace {

// "VmRSS:     1234 kB" -> bytes; 0 when absent.
int64_t status_field_bytes(const std::string& status, const char* name) {
  const auto pos = status.find(name);
  if (pos == std::string::npos) return 0;
  long long kb = 0;
  if (std::sscanf(status.c_str() + pos + std::strlen(name), ": %lld kB", &kb) != 1) return 0;
  return static_cast<int64_t>(kb) * 1024;
}

std::string read_proc_status() {
  std::ifstream in("/proc/self/status");
  if (!in) return {};
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

HostMemory host_memory() {
  HostMemory m;
  const std::string s = read_proc_status();
  m.rss_bytes = status_field_bytes(s, "VmRSS");
  m.peak_rss_bytes = status_field_bytes(s, "VmHWM");
  if (m.peak_rss_bytes == 0) {
    rusage ru{};
    if (::getrusage(RUSAGE_SELF, &ru) == 0) m.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;  // kB on Linux
  }
  return m;
}

bool reset_host_peak() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

CudaMemory cuda_memory(int index) {
  CudaMemory m;
#if defined(MNEMO_TORCH_CUDA)
  if (index < 0 || index >= cuda_devices()) return m;
  lazy_init_cuda();  // the allocator's statistics throw before CUDA is initialised (LibTorch 2.x)
  const auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
  m.available = true;
  m.allocated_bytes = st.allocated_bytes[0].current;  // [0] = StatType::AGGREGATE
  m.peak_allocated_bytes = st.allocated_bytes[0].peak;
  m.reserved_bytes = st.reserved_bytes[0].current;
  m.peak_reserved_bytes = st.reserved_bytes[0].peak;
#else
  (void)index;
#endif
  return m;
}

void reset_cuda_peak(int index) {
#if defined(MNEMO_TORCH_CUDA)
  if (index >= 0 && index < cuda_devices()) {
    lazy_init_cuda();
    c10::cuda::CUDACachingAllocator::resetPeakStats(index);
  }
#else
  (void)index;
#endif
}

void PeakMemoryMeter::begin() {
  start_ = StepMemory();
  start_.host_peak_since_begin = reset_host_peak();
  start_.host_baseline_bytes = host_memory().rss_bytes;
  if (device_.is_cuda()) {
    const int idx = device_.has_index() ? device_.index() : 0;
    reset_cuda_peak(idx);
    start_.device_baseline_bytes = cuda_memory(idx).allocated_bytes;
  }
}

StepMemory PeakMemoryMeter::end() const {
  StepMemory m = start_;
  const HostMemory h = host_memory();
  m.host_peak_bytes = std::max(h.peak_rss_bytes, h.rss_bytes);
  if (device_.is_cuda()) {
    const CudaMemory c = cuda_memory(device_.has_index() ? device_.index() : 0);
    m.device_peak_bytes = c.peak_allocated_bytes;
    m.device_peak_reserved_bytes = c.peak_reserved_bytes;
  }
  return m;
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 0) return "n/a";
  const double b = static_cast<double>(bytes);
  std::ostringstream s;
  s.setf(std::ios::fixed);
  if (b < 1024.0) s << bytes << " B";
  else if (b < 1024.0 * 1024.0) s << std::setprecision(1) << b / 1024.0 << " KiB";
  else if (b < 1024.0 * 1024.0 * 1024.0) s << std::setprecision(1) << b / (1024.0 * 1024.0) << " MiB";
  else s << std::setprecision(2) << b / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return s.str();
}

}  // namespace mnemo
