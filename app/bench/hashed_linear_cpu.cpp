#include "app/bench/hashed_linear_cpu.h"

#include "app/bench/stats.h"
#include "app/cli/assets.h"
#include "app/cli/cli.h"
#include "core/io/safetensors.h"
#include "core/nn/hashed_linear.h"
#include "kernels/hashed_lookup_cpu.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace mnemo::app::bench {

namespace {


std::string first_line_of(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (key.empty()) return line;
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "?";
}

// Sets OpenBLAS's thread count when OpenBLAS is what LibTorch's BLAS calls resolve to.
void set_blas_threads(int threads) {
  using SetFn = void (*)(int);
  if (auto* f = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(threads);
}

// x [n, k * bits] whose chunks fall in buckets drawn from p(rank) ~ rank^-s, each table with
// its own random rank -> bucket map; magnitudes |N(0, 1)|. s = 0 gives x ~ N(0, 1).
torch::Tensor make_input(int64_t n, int64_t k, int64_t bits, double s) {
  if (s <= 0) return torch::randn({n, k * bits});
  const int64_t r = int64_t{1} << bits;
  auto w = torch::arange(1, r + 1, torch::kFloat64).pow(-s);
  auto ranks = torch::multinomial((w / w.sum()).unsqueeze(0).expand({k, r}).contiguous(), n, /*replacement=*/true);
  auto perm = torch::argsort(torch::rand({k, r}), /*dim=*/1, /*descending=*/false);
  auto codes = perm.gather(1, ranks).t().contiguous();  // [n, k]
  auto bit = codes.unsqueeze(-1).bitwise_right_shift(torch::arange(bits, torch::kInt64)).bitwise_and(1);
  return ((bit.to(torch::kFloat32) * 2 - 1) * torch::randn({n, k, bits}).abs()).view({n, k * bits});
}

// Bytes a call must move: to/from DRAM at least once (tables, inputs, outputs, codes), and
// table pieces through L2 into the core (one kCols-wide piece per lookup and column block).
struct Traffic {
  double dram = 0, gathered = 0;
};

Traffic forward_traffic(int64_t n, int64_t k, int64_t rows, int64_t d_in, int64_t d_out, double elem) {
  return {elem * static_cast<double>(k * rows * d_out) + 4.0 * static_cast<double>(n * (d_in + d_out)) +
              8.0 * static_cast<double>(n * k),
          elem * static_cast<double>(n * k * d_out)};
}

// Forward, then the input gradient (tables read again, x and dy read, dx written) and the
// table gradient (dy read again, the fp32 gradient written).
Traffic fwd_bwd_traffic(int64_t n, int64_t k, int64_t rows, int64_t d_in, int64_t d_out, double elem) {
  const Traffic f = forward_traffic(n, k, rows, d_in, d_out, elem);
  const double table = static_cast<double>(k * rows * d_out);
  return {f.dram + elem * table + 4.0 * table + 8.0 * static_cast<double>(n * d_out) +
              8.0 * static_cast<double>(n * d_in) + 8.0 * static_cast<double>(n * k),
          f.gathered + (elem + 4.0) * static_cast<double>(n * k * d_out)};
}

struct Row {
  int64_t threads = 1, tokens = 0;
  std::string tables, pass, loads, cache;
  double hash_wall = 0, dense_wall = 0, hash_cpu = 0, dense_cpu = 0;
  Traffic traffic;
  double roofline_ms = 0;  // the least time the traffic allows (see run_hashed_linear_cpu)
};

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// --against-python: the Memory Layer as the Python package writes it in PyTorch ops, on the
// bench's own fp32 tables and uniform inputs, timed in a child process per thread count, beside
// the kernel's rows (cache on where run: the tables as held between optimizer steps).
void against_python(const HashedCpuOptions& o, const std::vector<Row>& rows, int64_t d, int64_t bits,
                    std::ostream& out) {
  const std::string script = find_asset("../app/bench/python/hashed_eager.py");
  const int64_t k = d / bits, nrows = int64_t{1} << bits, d_in = k * bits;
  std::vector<std::unique_ptr<TempFile>> files;
  std::string list;
  for (const int64_t n : o.tokens) {
    // The tables, input and output gradient of the fp32 uniform cases (the same draws).
    torch::manual_seed(1234);
    auto tables = (torch::rand({k, nrows, d}) * 2 - 1).div(std::sqrt(static_cast<double>(k)));
    (void)torch::rand({d, d_in});
    auto dy = torch::randn({n, d});
    auto x = make_input(n, k, bits, 0.0);
    torch::Tensor y;
    {
      torch::NoGradGuard g;
      y = memory_layer(x, tables, MemoryLayerOptions{bits, 1.0, true, nullptr}).y;
    }
    files.push_back(std::make_unique<TempFile>("mnemo-bench-hashed-", ".safetensors"));
    io::save_safetensors(files.back()->path(), {{"tables", tables}, {"x", x}, {"dy", dy}, {"y", y}}, {});
    list += (list.empty() ? "" : ",") + files.back()->path();
  }
  std::string passes;
  for (const auto& p : o.passes) passes += (passes.empty() ? "" : ",") + p;
  char line[512];
  out << "\nagainst the same layer in PyTorch ops (mnemoscope.models.HashedProjection: codes, p(z), one embedding_bag; "
         "autograd backward), same tables and inputs, fp32 tables, uniform loads, median of "
      << o.repeats << ":\n";
  std::snprintf(line, sizeof line, "%3s %6s %-8s %-5s %11s %13s %9s %13s %13s %12s\n", "thr", "tokens", "pass", "cache",
                "kernel wall", "PyTorch wall", "kernel is", "torch dense", "LibTorch dense", "max diff y");
  out << line;
  std::string torch_version;
  for (const int64_t threads : o.threads) {
    int code = -1;
    const std::string text = run_child({o.python, script, "--inputs", list, "--repeats", std::to_string(o.repeats),
                                        "--threads", std::to_string(threads), "--passes", passes},
                                       "", /*merge_stderr=*/true, &code);
    if (code == 127)
      throw UsageError("bench hashed-linear --against-python: cannot run " + o.python + "; name a python3 with "
                       "PyTorch with --python");
    if (code == 77)
      throw UsageError("bench hashed-linear --against-python: " + o.python + " has no PyTorch; install Debian's "
                       "python3-torch (bash .ci/setup does) or name another interpreter with --python");
    nlohmann::json j;
    try {
      if (code != 0) throw std::runtime_error("exit " + std::to_string(code));
      j = nlohmann::json::parse(last_json_line(text));
    } catch (const std::exception& ex) {
      throw UsageError("bench hashed-linear --against-python: " + o.python + " " + script + " failed (" + ex.what() +
                       "): " + text.substr(0, 2000));
    }
    torch_version = j.value("torch", std::string("?"));
    for (const auto& c : j.at("cases")) {
      const int64_t n = c.at("tokens").get<int64_t>();
      const std::string pass = c.at("pass").get<std::string>();
      const Row* mine = nullptr;  // the kernel's row: cache on where run, else off
      for (const auto& r : rows)
        if (r.threads == threads && r.tokens == n && r.pass == pass && r.tables == "fp32" && r.loads == "uniform" &&
            (mine == nullptr || r.cache == "on"))
          mine = &r;
      if (mine == nullptr) continue;
      const double py = c.at("hashed_wall_ms").get<double>();
      std::snprintf(line, sizeof line, "%3lld %6lld %-8s %-5s %8.3f ms %10.3f ms %8.2fx %10.3f ms %11.3f ms %12.2g\n",
                    static_cast<long long>(threads), static_cast<long long>(n), pass.c_str(), mine->cache.c_str(),
                    mine->hash_wall, py, py / mine->hash_wall, c.at("dense_wall_ms").get<double>(), mine->dense_wall,
                    c.at("max_abs_diff").get<double>());
      out << line;
    }
  }
  out << "(PyTorch " << torch_version << " by " << o.python << "; kernel is = PyTorch wall / kernel wall; torch dense = "
         "torch.nn.functional.linear in that process, LibTorch dense = this one's; max diff y = the largest |y_python - "
         "y_kernel| of the forward, float rounding: the kernel sums the K tables in order, the bag in its own)\n";
}

// The 1, 5 and 15-minute load averages.
std::string load_average() {
  std::istringstream in(first_line_of("/proc/loadavg", ""));
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

StreamBandwidth measure_stream_bandwidth(int threads) {
  threads = std::max(1, threads);
  constexpr size_t kFloats = size_t{32} << 20;  // 128 MiB per array per thread
  StreamBandwidth best;
  std::vector<std::thread> pool;
  std::vector<StreamBandwidth> per(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<float> a(kFloats, 1.0f), b(kFloats, 2.0f), c(kFloats, 0.0f);
      StreamBandwidth& s = per[static_cast<size_t>(t)];
      volatile float sink = 0;
      for (int pass = 0; pass < 4; ++pass) {
        // Each kernel timed by this thread's CPU time: waiting for a core does not count.
        double t0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
        float acc[16] = {};
        for (size_t i = 0; i < kFloats; i += 16)
          for (int l = 0; l < 16; ++l) acc[l] += a[i + static_cast<size_t>(l)];
        double ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
        for (float v : acc) sink = sink + v;
        s.read = std::max(s.read, 4.0 * kFloats / ms / 1e6);
        t0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
        for (size_t i = 0; i < kFloats; ++i) c[i] = a[i];
        ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
        s.copy = std::max(s.copy, 8.0 * kFloats / ms / 1e6);
        t0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
        for (size_t i = 0; i < kFloats; ++i) c[i] = a[i] + 1.5f * b[i];
        ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - t0;
        s.triad = std::max(s.triad, 12.0 * kFloats / ms / 1e6);
        sink = sink + c[kFloats / 2];
      }
    });
  }
  for (auto& th : pool) th.join();
  for (const auto& s : per) {  // threads ran at the same time: their rates add up
    best.read += s.read;
    best.copy += s.copy;
    best.triad += s.triad;
  }
  return best;
}

std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> libs;
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string base = path.substr(path.rfind('/') + 1);
    if (base.find("blas") == std::string::npos && base.find("mkl") == std::string::npos) continue;
    char* real = realpath(path.c_str(), nullptr);
    libs.insert(real ? std::string(real) : path);
    std::free(real);
  }
  std::string out;
  for (const auto& l : libs) out += (out.empty() ? "" : ", ") + l;
  if (out.empty()) out = "none found";
  using ConfigFn = char* (*)();
  if (auto* f = reinterpret_cast<ConfigFn>(dlsym(RTLD_DEFAULT, "openblas_get_config"))) out += std::string(" (") + f() + ")";
  return out;
}

void validate_hashed_cpu_options(const HashedCpuOptions& o) {
  if (o.threads.empty()) throw UsageError("--threads: give at least one thread count");
  for (auto t : o.threads)
    if (t < 1 || t > 256) throw UsageError("--threads " + std::to_string(t) + " is out of range 1..256");
  if (o.tables.empty()) throw UsageError("--tables: give at least one of fp32, bf16, fp16");
  auto check = [](const std::vector<std::string>& v, const std::string& flag, const std::vector<std::string>& ok) {
    std::string list;
    for (const auto& a : ok) list += (list.empty() ? "" : ", ") + a;
    if (v.empty()) throw UsageError(flag + ": give at least one of " + list);
    for (const auto& a : v)
      if (!has(ok, a)) throw UsageError(flag + " " + a + " is unknown: use " + list);
  };
  check(o.table_cache, "--table-cache", {"on", "off"});
  check(o.passes, "--passes", {"forward", "fwd+bwd"});
  check(o.loads, "--loads", {"uniform", "zipf"});
  for (const auto& t : o.tables)
    if (t != "fp32" && t != "bf16" && t != "fp16")
      throw UsageError("--tables " + t + " is unknown: use fp32, bf16 or fp16");
  try {
    (void)kernels::cpu_isa();  // reads MNEMO_CPU_KERNELS
    if (o.cpu_kernels != "auto" && !kernels::cpu_isa_supported(kernels::parse_cpu_isa(o.cpu_kernels)))
      throw std::invalid_argument("CPU kernel path '" + o.cpu_kernels + "' cannot run here (this CPU or build supports up to '" +
                                  kernels::cpu_isa_name(kernels::cpu_isa_best()) + "')");
  } catch (const std::invalid_argument& e) {
    throw UsageError(o.cpu_kernels != "auto" && std::string(e.what()).rfind("MNEMO_CPU_KERNELS", 0) != 0
                         ? std::string("--cpu-kernels: ") + e.what()
                         : std::string(e.what()));
  }
}

void run_hashed_linear_cpu(const HashedCpuOptions& o, std::ostream& out) {
  validate_hashed_cpu_options(o);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const kernels::CpuIsa isa_before = kernels::cpu_isa();
  if (o.cpu_kernels != "auto") kernels::set_cpu_isa(kernels::parse_cpu_isa(o.cpu_kernels));
  struct Restore {  // the kernel path and thread count this process had
    kernels::CpuIsa isa;
    int threads;
    ~Restore() {
      kernels::set_cpu_isa(isa);
      torch::set_num_threads(threads);
      set_blas_threads(threads);
    }
  } restore{isa_before, torch::get_num_threads()};

  // d_out = dim; d_in = K tau (dim itself when tau divides it).
  const int64_t d = o.dim, bits = o.bits, k = d / bits, rows = int64_t{1} << bits, d_in = k * bits;
  const std::string load0 = load_average();
  out << "CPU: " << first_line_of("/proc/cpuinfo", "model name") << ", " << cores << " hardware threads; load average "
      << load0 << " (start)\n";
  out << "dense baseline: torch::nn::functional::linear, BLAS loaded: " << loaded_blas() << blas_environment_note()
      << "\n";
  out << "hashed kernels: " << kernels::cpu_isa_name(kernels::cpu_isa()) << " path (widest this CPU runs: "
      << kernels::cpu_isa_name(kernels::cpu_isa_best()) << "; --cpu-kernels or MNEMO_CPU_KERNELS choose)\n";

  // The bounds: DRAM bandwidth (STREAM-like) and the gather loop's rate from L2.
  const StreamBandwidth sb1 = measure_stream_bandwidth(1);
  const double probe = kernels::hashed_lookup_gather_probe_gbs(0.3);
  out << "memory, 1 thread: stream read " << fmt("%.1f", sb1.read) << " GB/s, copy " << fmt("%.1f", sb1.copy)
      << " GB/s, triad " << fmt("%.1f", sb1.triad) << " GB/s (128 MiB arrays, best of 4, thread CPU time); gather probe "
      << (probe > 0 ? fmt("%.1f", probe) + " GB/s (the forward's inner loop on 512 KiB of slabs in L2)"
                    : std::string("n/a (portable path)"))
      << "\n";
  StreamBandwidth sbn = sb1;
  const int max_threads = static_cast<int>(*std::max_element(o.threads.begin(), o.threads.end()));
  if (max_threads > 1) {
    sbn = measure_stream_bandwidth(max_threads);
    out << "memory, " << max_threads << " threads: stream read " << fmt("%.1f", sbn.read) << " GB/s, copy "
        << fmt("%.1f", sbn.copy) << " GB/s, triad " << fmt("%.1f", sbn.triad) << " GB/s\n";
  }

  std::vector<Row> rows_out;
  std::vector<std::string> pack_lines;
  for (const int64_t threads : o.threads) {
    torch::set_num_threads(static_cast<int>(threads));
    set_blas_threads(static_cast<int>(threads));
    for (const auto& tname : o.tables) {
      const auto tdtype = tname == "bf16" ? torch::kBFloat16 : tname == "fp16" ? torch::kFloat16 : torch::kFloat32;
      const double elem = tname == "fp32" ? 4.0 : 2.0;
      for (const int64_t n : o.tokens) {
        torch::manual_seed(1234);
        auto tables = ((torch::rand({k, rows, d}) * 2 - 1).div(std::sqrt(static_cast<double>(k)))).to(tdtype);
        auto w = (torch::rand({d, d_in}) * 2 - 1).div(std::sqrt(static_cast<double>(d_in)));
        auto b = torch::zeros({d});
        auto dy = torch::randn({n, d});
        struct Case {
          std::string pass, loads, cache;
          torch::Tensor x;
          bool backward;
        };
        // Each (pass, loads) pair has one dense timing, shared by its table-cache variants.
        auto xu = make_input(n, k, bits, 0.0), xz = make_input(n, k, bits, o.zipf);
        const std::string zname = "zipf" + fmt("%.2g", o.zipf);
        std::vector<Case> cases;
        for (const auto& pass : o.passes)
          for (const auto& loads : o.loads)
            for (const auto& cache : o.table_cache)
              cases.push_back({pass, loads == "zipf" ? zname : loads, cache, loads == "zipf" ? xz : xu, pass == "fwd+bwd"});
        // One cache per case: "on" keeps the tables packed across calls; a fwd+bwd case's
        // cache is cleared before each call (an optimizer step changed the tables), so it
        // packs once per call, for its forward and its backward.
        std::vector<PackedTablesCache> caches(cases.size());
        std::vector<std::vector<Timing>> th(cases.size()), td(cases.size());
        std::vector<bool> dense_of(cases.size(), false);  // the case that times the dense layer
        for (size_t ci = 0; ci < cases.size(); ++ci) {
          bool first = true;
          for (size_t cj = 0; cj < ci; ++cj)
            first = first && !(cases[cj].pass == cases[ci].pass && cases[cj].loads == cases[ci].loads);
          dense_of[ci] = first;
        }
        auto tl = tables.detach().requires_grad_(true);
        auto wl = w.detach().requires_grad_(true), bl = b.detach().requires_grad_(true);
        for (int64_t rep = -1; rep < o.repeats; ++rep) {  // rep -1 warms up; contenders interleaved
          for (size_t ci = 0; ci < cases.size(); ++ci) {
            const Case& c = cases[ci];
            const MemoryLayerOptions opt{bits, 1.0, true, c.cache == "on" ? &caches[ci] : nullptr};
            Timing hm, dm;
            if (!c.backward) {
              torch::NoGradGuard g;
              hm = time_call([&] { (void)memory_layer(c.x, tables, opt); });
              if (dense_of[ci]) dm = time_call([&] { (void)torch::nn::functional::linear(c.x, w, b); });
            } else {
              auto xl = c.x.detach().requires_grad_(true);
              caches[ci].invalidate();
              hm = time_call([&] { memory_layer(xl, tl, opt).y.backward(dy); });
              xl.mutable_grad() = torch::Tensor();  // no gradient accumulation in the next timing
              tl.mutable_grad() = torch::Tensor();
              if (dense_of[ci]) {
                dm = time_call([&] { torch::nn::functional::linear(xl, wl, bl).backward(dy); });
                wl.mutable_grad() = torch::Tensor();
                bl.mutable_grad() = torch::Tensor();
              }
            }
            if (rep >= 0) {
              th[ci].push_back(hm);
              td[ci].push_back(dm);
            }
          }
        }
        for (size_t ci = 0; ci < cases.size(); ++ci)  // the dense timing of the same pass and loads
          if (!dense_of[ci])
            for (size_t cj = 0; cj < ci; ++cj)
              if (dense_of[cj] && cases[cj].pass == cases[ci].pass && cases[cj].loads == cases[ci].loads) td[ci] = td[cj];
        // What keeping the tables packed costs per optimizer step: one pack, alone.
        if (has(o.table_cache, "on") && n == o.tokens.front()) {
          PackedTablesCache pc;
          std::vector<double> pack_cpu, pack_wall;
          for (int64_t rep = -1; rep < o.repeats; ++rep) {
            pc.invalidate();
            const Timing t = time_call([&] { (void)pc.get(tables); });
            if (rep >= 0) {
              pack_cpu.push_back(t.cpu_ms);
              pack_wall.push_back(t.wall_ms);
            }
          }
          // Against the optimizer step it follows: torch's AdamW on the same tables.
          auto param = tables.clone().requires_grad_(true);
          param.mutable_grad() = torch::randn(tables.sizes()).to(tdtype);
          torch::optim::AdamW adamw({param}, torch::optim::AdamWOptions(1e-3));
          std::vector<double> step_cpu;
          for (int64_t rep = -1; rep < o.repeats; ++rep) {
            const Timing t = time_call([&] { adamw.step(); });
            if (rep >= 0) step_cpu.push_back(t.cpu_ms);
          }
          pack_lines.push_back("  " + std::to_string(threads) + " thread(s), " + tname + " tables: " +
                               fmt("%.3f", median(pack_cpu)) + " ms cpu, " + fmt("%.3f", median(pack_wall)) +
                               " ms wall; one torch AdamW step on the same tables: " + fmt("%.3f", median(step_cpu)) +
                               " ms cpu");
        }
        for (size_t ci = 0; ci < cases.size(); ++ci) {
          auto pick = [](const std::vector<Timing>& v, bool cpu) {
            std::vector<double> x;
            for (const auto& t : v) x.push_back(cpu ? t.cpu_ms : t.wall_ms);
            return median(x);
          };
          Row r;
          r.threads = threads;
          r.tokens = n;
          r.tables = tname;
          r.pass = cases[ci].pass;
          r.loads = cases[ci].loads;
          r.cache = cases[ci].cache;
          r.hash_wall = pick(th[ci], false);
          r.dense_wall = pick(td[ci], false);
          r.hash_cpu = pick(th[ci], true);
          r.dense_cpu = pick(td[ci], true);
          r.traffic = cases[ci].backward ? fwd_bwd_traffic(n, k, rows, d_in, d, elem) : forward_traffic(n, k, rows, d_in, d, elem);
          rows_out.push_back(r);
        }
      }
    }
  }

  out << "Times: median of " << o.repeats << " interleaved runs. wall = elapsed; cpu = this process's CPU time over\n"
         "the call (all threads; on a shared machine it leaves out time spent waiting for a core). speed-up = dense /\n"
         "hashed. DRAM GB/s = bytes the call must move to or from memory / (cpu time / threads), with the share of\n"
         "the stream read bandwidth; L2 GB/s = table pieces multiply-added / the same time, with the share of the\n"
         "gather probe (fp32 pieces; bf16/fp16 move half the bytes per piece). fwd+bwd rows count both passes.\n"
         "cache = tables kept packed in the kernels' layout (PackedTablesCache): on = forward rows reuse one packed\n"
         "copy, fwd+bwd rows pack once per call (as after every optimizer step); off = packed inside every call\n"
         "(forward and input gradient each). roofline = the least time those bytes allow, max(DRAM bytes / stream\n"
         "read, L2 bytes / (probe x threads)), with its share of the hashed cpu time per thread.\n";
  char line[512];
  std::snprintf(line, sizeof line, "%3s %-6s %6s %-8s %-8s %-5s %9s %10s %8s %9s %9s %8s %14s %14s %16s\n", "thr",
                "tables", "tokens", "pass", "loads", "cache", "hash_wall", "dense_wall", "speed-up", "hash_cpu",
                "dense_cpu", "speed-up", "DRAM GB/s", "L2 GB/s", "roofline ms");
  out << line;
  for (auto& r : rows_out) {
    const double t_s = r.hash_cpu / static_cast<double>(r.threads) / 1e3;
    const double dram = r.traffic.dram / t_s / 1e9, l2 = r.traffic.gathered / t_s / 1e9;
    const double dram_bound = r.threads > 1 ? sbn.read : sb1.read;
    r.roofline_ms = std::max(r.traffic.dram / dram_bound / 1e6,
                             probe > 0 ? r.traffic.gathered / (probe * static_cast<double>(r.threads)) / 1e6 : 0.0);
    std::snprintf(line, sizeof line,
                  "%3lld %-6s %6lld %-8s %-8s %-5s %9.3f %10.3f %7.2fx %9.3f %9.3f %7.2fx %6.1f (%3.0f%%) %6.1f (%3.0f%%) "
                  "%8.3f (%3.0f%%)\n",
                  static_cast<long long>(r.threads), r.tables.c_str(), static_cast<long long>(r.tokens), r.pass.c_str(),
                  r.loads.c_str(), r.cache.c_str(), r.hash_wall, r.dense_wall, r.dense_wall / r.hash_wall, r.hash_cpu,
                  r.dense_cpu, r.dense_cpu / r.hash_cpu, dram, 100.0 * dram / dram_bound, l2,
                  probe > 0 ? 100.0 * l2 / (probe * static_cast<double>(r.threads)) : 0.0, r.roofline_ms,
                  100.0 * r.roofline_ms / (t_s * 1e3));
    out << line;
  }
  if (!pack_lines.empty()) {
    out << "packing the tables into the kernels' layout once (what each optimizer step adds with cache on; median):\n";
    for (const auto& l : pack_lines) out << l << "\n";
  }
  out << "backward alone (fwd+bwd minus forward, same loads):\n";
  for (const auto& fb : rows_out) {
    if (fb.pass != "fwd+bwd") continue;
    for (const auto& f : rows_out) {
      if (f.pass != "forward" || f.threads != fb.threads || f.tables != fb.tables || f.tokens != fb.tokens ||
          f.loads != fb.loads || f.cache != fb.cache)
        continue;
      std::snprintf(line, sizeof line,
                    "  %3lld %-6s %6lld %-8s %-5s wall: hashed %9.3f ms dense %9.3f ms (%.2fx)   cpu: hashed %9.3f ms "
                    "dense %9.3f ms (%.2fx)\n",
                    static_cast<long long>(fb.threads), fb.tables.c_str(), static_cast<long long>(fb.tokens),
                    fb.loads.c_str(), fb.cache.c_str(), fb.hash_wall - f.hash_wall, fb.dense_wall - f.dense_wall,
                    (fb.dense_wall - f.dense_wall) / (fb.hash_wall - f.hash_wall), fb.hash_cpu - f.hash_cpu,
                    fb.dense_cpu - f.dense_cpu, (fb.dense_cpu - f.dense_cpu) / (fb.hash_cpu - f.hash_cpu));
      out << line;
    }
  }
  // Roofline of the forward: the least time the bytes it must move allow.
  for (const auto& tname : o.tables) {
    const double elem = tname == "fp32" ? 4.0 : 2.0;
    for (const int64_t n : o.tokens) {
      const Traffic t = forward_traffic(n, k, rows, d_in, d, elem);
      const double mib = 1.0 / (1 << 20);
      std::snprintf(line, sizeof line,
                    "roofline, forward, %s tables, N = %lld, 1 thread: >= %.1f MiB to/from DRAM (tables %.1f, x %.1f, "
                    "y %.1f, codes %.1f) -> >= %.2f ms at %.1f GB/s; %.1f MiB of table pieces through L2 -> >= %.2f ms "
                    "at the probe's %.1f GB/s\n",
                    tname.c_str(), static_cast<long long>(n), t.dram * mib,
                    elem * static_cast<double>(k * rows * d) * mib, 4.0 * static_cast<double>(n * d_in) * mib,
                    4.0 * static_cast<double>(n * d) * mib, 8.0 * static_cast<double>(n * k) * mib,
                    t.dram / sb1.read / 1e6, sb1.read, t.gathered * mib,
                    probe > 0 ? t.gathered / probe / 1e6 : 0.0, probe);
      out << line;
    }
  }
  // Goals (docs/benchmarks.md, "Roofline, and why the goals are missed"), at the sizes they are
  // set for (d = 512, tau = 8, one thread), for every N, load and table cache setting run:
  // forward with fp32 tables >= 70 % of its roofline and >= 2x dense; forward with bf16 tables
  // >= 3x dense; fwd+bwd with fp32 tables >= 1.5x dense.
  for (const auto& r : rows_out) {
    if (d != 512 || bits != 8 || r.threads != 1) continue;
    const double s = r.dense_wall / r.hash_wall, sc = r.dense_cpu / r.hash_cpu;
    auto speed_goal = [&](double goal) {
      std::snprintf(line, sizeof line,
                    "goal CPU %s >= %.1fx dense (%s tables, 1 thread, cache %s), N = %lld, %s: wall %.2fx -> %s; cpu "
                    "time %.2fx -> %s\n",
                    r.pass.c_str(), goal, r.tables.c_str(), r.cache.c_str(), static_cast<long long>(r.tokens),
                    r.loads.c_str(), s, s >= goal ? "met" : "MISSED", sc, sc >= goal ? "met" : "MISSED");
      out << line;
    };
    if (r.pass == "forward" && r.tables == "fp32") {
      speed_goal(2.0);
      const double share = r.roofline_ms / r.hash_cpu;
      std::snprintf(line, sizeof line,
                    "goal CPU forward >= 70%% of the roofline (fp32 tables, 1 thread, cache %s), N = %lld, %s: %.3f ms "
                    "of cpu time against a %.3f ms roofline = %.0f%% -> %s\n",
                    r.cache.c_str(), static_cast<long long>(r.tokens), r.loads.c_str(), r.hash_cpu, r.roofline_ms,
                    100.0 * share, share >= 0.7 ? "met" : "MISSED");
      out << line;
    } else if (r.pass == "forward" && r.tables == "bf16") {
      speed_goal(3.0);
    } else if (r.pass == "fwd+bwd" && r.tables == "fp32") {
      speed_goal(1.5);
    }
  }
  if (o.against_python) {
    if (!has(o.tables, "fp32") || !has(o.loads, "uniform"))
      throw UsageError("bench hashed-linear --against-python compares fp32 tables on uniform loads; add fp32 to "
                       "--tables and uniform to --loads");
    against_python(o, rows_out, d, bits, out);
  }
  out << "load average at the end: " << load_average() << "\n";
}

}  // namespace mnemo::app::bench
