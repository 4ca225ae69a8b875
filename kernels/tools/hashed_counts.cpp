// mnemo_hashed_counts: the hashed layer's packed CPU forward (kernels/hashed_lookup_cpu.h)
// alone, in a process that loads no LibTorch, so that valgrind's cache simulator can count
// what one call moves through the caches (docs/experiments/hashed_cachesim.sh,
// docs/benchmarks.md "Counted"). LibTorch's own dependencies carry instructions valgrind
// does not decode (RDTSCP in libhwy's start-up), so `mnemoscope bench` cannot run under it.
//
// The inputs are those of `bench hashed-linear` with uniform loads: tables uniform in
// [-1, 1) / sqrt(K), x ~ N(0, 1), packed once before the calls (the table cache on). Each
// call is timed by the thread's CPU clock; the last line is a checksum of y, so that two
// paths or two builds can be compared.
#include "kernels/hashed_lookup_cpu.h"
#include "kernels/limits.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <ctime>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using mnemo::kernels::TableType;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

uint16_t to_bf16(float v) {  // round to nearest even (the tables are finite)
  uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

// 64-byte aligned, as LibTorch's CPU allocator gives the packed tables and the activations:
// a 128-byte table piece then spans two cache lines, not three.
template <typename T>
struct Aligned {
  explicit Aligned(size_t count) : n(count), p(static_cast<T*>(std::aligned_alloc(64, (count * sizeof(T) + 63) / 64 * 64))) {
    if (p == nullptr) throw std::bad_alloc();
    std::fill(p, p + n, T{});
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  T* begin() { return p; }
  T* end() { return p + n; }
  T* data() { return p; }
  size_t n;
  T* p;
};

// Non-temporal writes of 32 MiB as runs of `run` bytes whose starts are 2 KiB apart, run
// after run over a row of 2 KiB, then the next 2 KiB row: the pattern in which the table
// gradient writes d_tables ([K, 2^tau, d_out], rows 4 d_out bytes apart) when it takes
// run / 128 column blocks of 32 floats at a time, at d_out = 512. Returns GB/s (median of 9).
double write_runs_gbs(int64_t run) {
#if defined(__x86_64__)
  constexpr int64_t kBytes = int64_t{32} << 20, kRow = 2048;
  float* a = static_cast<float*>(std::aligned_alloc(64, kBytes));
  if (a == nullptr) throw std::bad_alloc();
  std::memset(a, 0, kBytes);  // the pages exist before the timing
  std::vector<double> t;
  for (int rep = 0; rep < 9; ++rep) {
    const __m128 v = _mm_set1_ps(static_cast<float>(rep));
    const double t0 = cpu_seconds();
    for (int64_t c0 = 0; c0 < kRow; c0 += run)
      for (int64_t row = 0; row < kBytes; row += kRow)
        for (int64_t o = 0; o < run; o += 16) _mm_stream_ps(a + (row + c0 + o) / 4, v);
    _mm_sfence();
    t.push_back(cpu_seconds() - t0);
  }
  std::free(a);
  std::sort(t.begin(), t.end());
  return static_cast<double>(kBytes) / t[t.size() / 2] / 1e9;
#else
  (void)run;
  return 0;
#endif
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "mnemo_hashed_counts: %s\n"
               "usage: mnemo_hashed_counts [--tokens N] [--dim D] [--bits TAU] [--tables fp32|bf16] [--calls C]\n"
               "                           [--cpu-kernels avx2|avx512|portable] [--probe] [--phases] [--write-runs]\n"
               "  defaults: N 2048, D 512, TAU 8, fp32, 3 calls, the widest path this CPU runs;\n"
               "  --probe also prints the gather probe's rate (GB/s of table pieces from L2, see the header);\n"
               "  --phases times the codes, the slab fetches and the gathers of every call, and prints\n"
               "  their medians over the calls after the first with the rate of each;\n"
               "  --write-runs also times non-temporal writes of 32 MiB in runs of 128 .. 2048 bytes 2 KiB\n"
               "  apart (the table gradient's write pattern, x86-64 only)\n",
               why.c_str());
  std::exit(2);
}

int64_t positive(const char* flag, const char* text, int64_t hi) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 1 || v > hi)
    usage(std::string(flag) + " " + text + " is not a whole number in [1, " + std::to_string(hi) + "]");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  namespace k = mnemo::kernels;
  int64_t n = 2048, d = 512, tau = 8, calls = 3;
  std::string tables_name = "fp32";
  bool probe = false, phases = false, write_runs = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage("the packed forward, alone");
    if (a == "--probe" || a == "--phases" || a == "--write-runs") {
      (a == "--probe" ? probe : a == "--phases" ? phases : write_runs) = true;
      continue;
    }
    if (i + 1 >= argc) usage(a + " needs a value");
    const char* v = argv[++i];
    if (a == "--tokens") n = positive("--tokens", v, int64_t{1} << 24);
    else if (a == "--dim") d = positive("--dim", v, 1 << 16);
    else if (a == "--bits") tau = positive("--bits", v, k::kMaxHashBits);  // kMinHashBits is 1
    else if (a == "--calls") calls = positive("--calls", v, 1000);
    else if (a == "--tables") tables_name = v;
    else if (a == "--cpu-kernels") {
      try {
        k::set_cpu_isa(k::parse_cpu_isa(v));
      } catch (const std::exception& e) {
        usage(std::string("--cpu-kernels: ") + e.what());
      }
    } else usage("unknown flag " + a);
  }
  if (tables_name != "fp32" && tables_name != "bf16") usage("--tables " + tables_name + " is unknown: use fp32 or bf16");
  const int64_t kt = d / tau;
  if (kt < 1) usage("--dim must be at least --bits (K = dim / bits tables)");
  const int64_t rows = int64_t{1} << tau, d_in = kt * tau;
  const TableType type = tables_name == "bf16" ? TableType::kBFloat16 : TableType::kFloat32;

  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::normal_distribution<float> normal(0.f, 1.f);
  const float scale = 1.f / std::sqrt(static_cast<float>(kt));
  std::vector<float> t32(static_cast<size_t>(kt * rows * d));
  for (auto& v : t32) v = uni(rng) * scale;
  std::vector<uint16_t> t16;
  if (type == TableType::kBFloat16) {
    t16.resize(t32.size());
    std::transform(t32.begin(), t32.end(), t16.begin(), to_bf16);
  }
  const void* tables = type == TableType::kBFloat16 ? static_cast<const void*>(t16.data()) : t32.data();
  const size_t elem = type == TableType::kBFloat16 ? 2 : 4;
  Aligned<unsigned char> packed(static_cast<size_t>(k::hashed_packed_elems(kt, static_cast<int>(tau), d)) * elem);
  k::hashed_pack_tables_cpu(tables, type, packed.data(), kt, static_cast<int>(tau), d, {});

  Aligned<float> x(static_cast<size_t>(n * d_in)), y(static_cast<size_t>(n * d)), p(static_cast<size_t>(n * kt));
  Aligned<int32_t> bucket(static_cast<size_t>(n * kt));
  for (auto& v : x) v = normal(rng);

  std::printf("hashed forward, packed tables: N %lld, d %lld, tau %lld, K %lld, %s tables (%.1f MiB packed), path %s\n",
              static_cast<long long>(n), static_cast<long long>(d), static_cast<long long>(tau),
              static_cast<long long>(kt), tables_name.c_str(), static_cast<double>(packed.n) / (1 << 20),
              k::cpu_isa_name(k::cpu_isa()));
  std::vector<k::HashedForwardPhases> split;
  for (int64_t c = 0; c < calls; ++c) {
    k::HashedForwardPhases ph;
    const double t0 = cpu_seconds();
    if (phases)
      k::hashed_lookup_forward_packed_cpu(x.data(), packed.data(), type, y.data(), bucket.data(), p.data(), n, kt,
                                          static_cast<int>(tau), d, 1.0, ph);
    else
      k::hashed_lookup_forward_packed_cpu(x.data(), packed.data(), type, y.data(), bucket.data(), p.data(), n, kt,
                                          static_cast<int>(tau), d, 1.0, {});
    const double ms = 1e3 * (cpu_seconds() - t0);
    if (phases) {
      std::printf("call %lld: %.3f ms cpu (codes %.3f, fetch %.3f, gathers %.3f)\n", static_cast<long long>(c), ms,
                  1e3 * ph.codes, 1e3 * ph.fetch, 1e3 * ph.gathers);
      if (c > 0 || calls == 1) split.push_back(ph);
    } else {
      std::printf("call %lld: %.3f ms cpu\n", static_cast<long long>(c), ms);
    }
  }
  const double probe_gbs = probe ? k::hashed_lookup_gather_probe_gbs(0.3) : 0;
  if (probe) std::printf("gather probe: %.1f GB/s\n", probe_gbs);
  if (phases) {
    const auto median = [&](double k::HashedForwardPhases::*field) {
      std::vector<double> v;
      for (const auto& ph : split) v.push_back(ph.*field);
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double codes = median(&k::HashedForwardPhases::codes), fetch = median(&k::HashedForwardPhases::fetch),
                 gathers = median(&k::HashedForwardPhases::gathers);
    // Every lookup multiply-adds one piece of 32 table elements per column block.
    const double pieces = static_cast<double>(n * kt) * static_cast<double>((d + 31) / 32 * 32) * static_cast<double>(elem);
    if (gathers <= 0) {
      std::printf("phases: not split on the %s path\n", k::cpu_isa_name(k::cpu_isa()));
    } else {
      std::printf("phases, median of %zu calls: codes %.3f ms (%.0f M codes/s); fetch %.3f ms (%.1f MiB of slabs, %.1f GB/s);"
                  " gathers %.3f ms (%.1f MiB of table pieces, %.1f GB/s",
                  split.size(), 1e3 * codes, static_cast<double>(n * kt) / codes / 1e6, 1e3 * fetch,
                  static_cast<double>(packed.n) / (1 << 20), fetch > 0 ? static_cast<double>(packed.n) / fetch / 1e9 : 0.0,
                  1e3 * gathers, pieces / (1 << 20), pieces / gathers / 1e9);
      if (probe) std::printf(", %.0f %% of the probe", 100.0 * pieces / gathers / 1e9 / probe_gbs);
      std::printf(")\n");
    }
  }
  if (write_runs) {
#if defined(__x86_64__)
    for (const int64_t run : {128, 256, 512, 2048})
      std::printf("non-temporal writes, runs of %4lld bytes 2 KiB apart: %.1f GB/s\n", static_cast<long long>(run),
                  write_runs_gbs(run));
#else
    std::printf("--write-runs: not on this CPU (x86-64 only)\n");
#endif
  }
  double sum = 0;
  for (const float v : y) sum += v;
  std::printf("checksum sum(y) = %.9g\n", sum);
  return 0;
}
