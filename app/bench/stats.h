// app/bench — `mnemoscope bench <name>`: one file per benchmark, each running its contender
// and its baseline in the same process (or in fresh children of the same binary when peak
// memory must be clean) and printing ratios. Results go to docs/benchmarks.md with the exact
// command, the machine, its load and the BLAS in use; tests never time anything.
// This header: what every benchmark measures with.
#pragma once
#include <chrono>
#include <ctime>
#include <string>
#include <vector>

namespace mnemo::app::bench {

double median(std::vector<double> v);
// Nearest-rank percentile, p in [0, 1] (0.5 = median, 1 = max). 0 for an empty sample.
double percentile(std::vector<double> v, double p);

// CPU time in ms: of this process (all threads) / of the calling thread. CPU time is robust
// against other processes competing for the cores.
double process_cpu_ms();
double thread_cpu_ms();
// CPU time of clock `id` (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID) in ms.
double clock_ms(clockid_t id);
double ms_since(std::chrono::steady_clock::time_point t0);
// printf of one number ("%.2f"), as a string, for table cells.
std::string fmt(const char* format, double v);

// Wall and process CPU time of one call.
struct Timing {
  double wall_ms = 0, cpu_ms = 0;
};
template <class F>
Timing time_call(F&& f) {
  const double c0 = process_cpu_ms();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return {ms_since(t0), process_cpu_ms() - c0};
}

// "machine: N hardware threads, load average at the end: a b c" for reports, and
// blas_environment_note() after it when that is not empty.
std::string machine_line();
// "" or, when OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE is set, a note naming them: OpenBLAS then
// runs the kernels of the core type named, not those it picks for this CPU, so the BLAS
// baseline is not the one a user has (docs/benchmarks.md measured 10.8-12.5 ms against
// 5.8-6.1 ms for one dense forward with OPENBLAS_CORETYPE=Haswell on an AVX-512 machine).
std::string blas_environment_note();

// The running program's own path (/proc/self/exe), for benches that run themselves as children.
std::string self_exe();
// Runs args (argv[0] = the program: a path, or a name without '/' looked up in PATH, as a
// shell does) as a child process and returns its stdout (and stderr when
// merge_stderr; otherwise stderr passes through); lib_dir, when not empty, is put first in the
// child's LD_LIBRARY_PATH. *code: the exit status, 128 + signal when killed, 127 when argv[0]
// cannot be run.
std::string run_child(const std::vector<std::string>& args, const std::string& lib_dir, bool merge_stderr, int* code);
// The last line of a child's output that starts with '{' (and what follows it): where the
// benches' children and Python baselines print their one JSON result after any log lines.
// The whole text when no line starts so (the parse then fails, quoting it).
std::string last_json_line(const std::string& text);

// A new file in $TMPDIR (default /tmp), "<prefix>XXXXXX<suffix>", removed when this goes out
// of scope — also when the benchmark throws. fd() is open for writing until close().
// std::runtime_error naming the directory when it cannot be created.
class TempFile {
 public:
  explicit TempFile(const std::string& prefix, const std::string& suffix = "");
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  void close();

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace mnemo::app::bench
