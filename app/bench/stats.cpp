#include "app/bench/stats.h"

#include "core/io/atomic_file.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <stdexcept>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

namespace mnemo::app::bench {

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

TempFile::TempFile(const std::string& prefix, const std::string& suffix) {
  const char* env = std::getenv("TMPDIR");
  const std::string dir = env && *env ? env : "/tmp";
  std::string tmpl = dir + "/" + prefix + "XXXXXX" + suffix;
  fd_ = ::mkstemps(tmpl.data(), static_cast<int>(suffix.size()));
  if (fd_ < 0) throw std::runtime_error("cannot create a temporary file in " + dir + ": " + io::errno_text(errno));
  path_ = tmpl;
}

TempFile::~TempFile() {
  close();
  ::unlink(path_.c_str());
}

void TempFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

double clock_ms(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double process_cpu_ms() { return clock_ms(CLOCK_PROCESS_CPUTIME_ID); }
double thread_cpu_ms() { return clock_ms(CLOCK_THREAD_CPUTIME_ID); }

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string blas_environment_note() {
  std::string set;
  for (const char* v : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"})
    if (const char* x = std::getenv(v)) set += std::string(set.empty() ? "" : " ") + v + "=" + x;
  if (set.empty()) return "";
  return "; the environment sets " + set +
         ", so OpenBLAS runs those kernels, not the ones it picks for this CPU: the BLAS baseline is not "
         "a user's (run with env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)";
}

std::string machine_line() {
  char line[160];
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3)
    std::snprintf(line, sizeof line, "machine: %u hardware threads, load average at the end: %.2f %.2f %.2f",
                  std::thread::hardware_concurrency(), load[0], load[1], load[2]);
  else
    std::snprintf(line, sizeof line, "machine: %u hardware threads, load average unknown", std::thread::hardware_concurrency());
  return line + blas_environment_note();
}

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot find the program's own path (/proc/self/exe)");
  buf[n] = '\0';
  return buf;
}

std::string run_child(const std::vector<std::string>& args, const std::string& lib_dir, bool merge, int* code) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe: " + io::errno_text(errno));
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork: " + io::errno_text(errno));
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    if (merge) ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    if (!lib_dir.empty()) {
      const char* old = std::getenv("LD_LIBRARY_PATH");
      const std::string v = old && *old ? lib_dir + ":" + old : lib_dir;
      ::setenv("LD_LIBRARY_PATH", v.c_str(), 1);
    }
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return text;
}

std::string last_json_line(const std::string& text) {
  const size_t brace = text.rfind("\n{");
  return text.substr(brace == std::string::npos ? 0 : brace + 1);
}

}  // namespace mnemo::app::bench
