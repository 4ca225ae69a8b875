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

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "mnemo_hashed_counts: %s\n"
               "usage: mnemo_hashed_counts [--tokens N] [--dim D] [--bits TAU] [--tables fp32|bf16] [--calls C]\n"
               "                           [--cpu-kernels avx2|avx512|portable] [--probe]\n"
               "  defaults: N 2048, D 512, TAU 8, fp32, 3 calls, the widest path this CPU runs;\n"
               "  --probe also prints the gather probe's rate (GB/s of table pieces from L2, see the header)\n",
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
  bool probe = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage("the packed forward, alone");
    if (a == "--probe") {
      probe = true;
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
  for (int64_t c = 0; c < calls; ++c) {
    const double t0 = cpu_seconds();
    k::hashed_lookup_forward_packed_cpu(x.data(), packed.data(), type, y.data(), bucket.data(), p.data(), n, kt,
                                        static_cast<int>(tau), d, 1.0, {});
    std::printf("call %lld: %.3f ms cpu\n", static_cast<long long>(c), 1e3 * (cpu_seconds() - t0));
  }
  if (probe) std::printf("gather probe: %.1f GB/s\n", k::hashed_lookup_gather_probe_gbs(0.3));
  double sum = 0;
  for (const float v : y) sum += v;
  std::printf("checksum sum(y) = %.9g\n", sum);
  return 0;
}
