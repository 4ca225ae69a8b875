#include "app/bench/stats.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

namespace mnemo::app::bench {

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

namespace {
double clock_ms(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}
}  // namespace

double process_cpu_ms() { return clock_ms(CLOCK_PROCESS_CPUTIME_ID); }
double thread_cpu_ms() { return clock_ms(CLOCK_THREAD_CPUTIME_ID); }

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string machine_line() {
  char line[160];
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3)
    std::snprintf(line, sizeof line, "machine: %u hardware threads, load average at the end: %.2f %.2f %.2f",
                  std::thread::hardware_concurrency(), load[0], load[1], load[2]);
  else
    std::snprintf(line, sizeof line, "machine: %u hardware threads, load average unknown", std::thread::hardware_concurrency());
  return line;
}

}  // namespace mnemo::app::bench
