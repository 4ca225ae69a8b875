#include "core/platform/blas.h"

#include <torch/torch.h>

#if defined(__linux__)
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <thread>

namespace mnemo::platform {

namespace {

std::string real_path_of(const std::string& p) {
#if defined(__linux__)
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf)) return buf;
#endif
  return p;
}

std::string base_name(const std::string& p) {
  auto s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// What an object's real path says about the BLAS in it.
BlasKind kind_of_path(const std::string& real) {
  const std::string base = base_name(real);
  if (contains(real, "openblas")) return BlasKind::kOpenBlas;
  if (contains(real, "mkl")) return BlasKind::kMkl;
  if (contains(real, "blis")) return BlasKind::kBlis;
  // Debian's reference BLAS: /usr/lib/<triplet>/blas/libblas.so.3(.x.y.z); other
  // distributions install it as plain libblas.so.3 (refblas).
  if (contains(real, "/blas/libblas.so") || base.rfind("libblas.so", 0) == 0 || base.rfind("librefblas", 0) == 0)
    return BlasKind::kReference;
  return BlasKind::kOther;
}

bool looks_like_blas(const std::string& path) {
  const std::string b = base_name(path);
  for (const char* k : {"blas", "lapack", "mkl", "blis", "atlas"})
    if (contains(b, k)) return true;
  return false;
}

#if defined(__linux__)
int collect_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name && *info->dlpi_name) {
    const std::string name = info->dlpi_name;
    if (looks_like_blas(name)) {
      const std::string real = real_path_of(name);
      if (std::find(out->begin(), out->end(), real) == out->end()) out->push_back(real);
    }
  }
  return 0;
}
#endif

}  // namespace

std::string BlasInfo::summary() const {
  std::string s = name.empty() ? std::string("unknown BLAS") : name;
  if (!path.empty()) {
    s += " (" + path;
    if (!real_path.empty() && real_path != path) s += " -> " + real_path;
    s += ")";
  }
  if (threads > 0) s += ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  return s;
}

const char* reference_blas_fix() {
  return "run 'bash .ci/setup' (or 'sudo apt-get install libopenblas0-pthread'), which makes libblas.so.3 "
         "point to OpenBLAS; check with 'mnemoscope info'";
}

BlasInfo probe_blas() {
  BlasInfo info;
#if defined(__linux__)
  dl_iterate_phdr(collect_object, &info.loaded);
  // Make sure LibTorch's BLAS is resolved (it is loaded with libtorch_cpu, a dependency of
  // this program; the call is cheap).
  void* sym = ::dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (sym && ::dladdr(sym, &where) && where.dli_fname) {
    info.path = where.dli_fname;
    info.real_path = real_path_of(info.path);
    info.kind = kind_of_path(info.real_path);
    // The object that defines sgemm_ is a BLAS whatever its name (PyTorch's wheels link MKL
    // into libtorch_cpu.so).
    if (std::find(info.loaded.begin(), info.loaded.end(), info.real_path) == info.loaded.end())
      info.loaded.push_back(info.real_path);
  } else {
    info.name = "no BLAS loaded (no sgemm_ symbol in the process)";
    return info;
  }
  switch (info.kind) {
    case BlasKind::kOpenBlas: {
      using ConfigFn = char* (*)();
      using ThreadsFn = int (*)();
      auto cfg = reinterpret_cast<ConfigFn>(::dlsym(RTLD_DEFAULT, "openblas_get_config"));
      auto thr = reinterpret_cast<ThreadsFn>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
      info.name = cfg ? std::string(cfg()) : std::string("OpenBLAS");
      if (thr) info.threads = thr();
      break;
    }
    case BlasKind::kReference: info.name = "reference BLAS (Netlib)"; break;
    case BlasKind::kMkl: info.name = "Intel MKL"; break;
    case BlasKind::kBlis: info.name = "BLIS"; break;
    case BlasKind::kOther: info.name = "BLAS from " + base_name(info.real_path); break;
    case BlasKind::kUnknown: info.name = "unknown BLAS"; break;
  }
#else
  info.name = "unknown BLAS (the probe reads the loaded objects on Linux only)";
#endif
  return info;
}

void set_compute_threads(int n) {
  if (n < 1) n = 1;
  torch::set_num_threads(n);
#if defined(__linux__)
  using SetFn = void (*)(int);
  if (auto f = reinterpret_cast<SetFn>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(n);
#endif
}

int cpu_cores() {
#if defined(__linux__)
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (n >= 1) return static_cast<int>(n);
#endif
  const unsigned h = std::thread::hardware_concurrency();
  return h >= 1 ? static_cast<int>(h) : 1;
}

int default_compute_threads(bool* from_env) {
  if (from_env) *from_env = false;
  if (const char* v = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && errno == 0 && n >= 1 && n <= 4096) {
      if (from_env) *from_env = true;
      return static_cast<int>(n);
    }
  }
  return 1;  // see blas.h: more threads were slower for this program's models here
}

}  // namespace mnemo::platform
