// `mnemoscope train --nproc N ...`: starts N ranks of this program on one machine and waits
// for them, as torchrun does (docs/training.md#distributed). Each rank is this program run
// with the same command line minus --nproc, plus --rank r --world-size N --master ADDR:PORT
// and, unless --threads was given, --threads max(1, cores / N) so the ranks do not
// oversubscribe the cores.
//
// Signals: the ranks stay in the launcher's process group, so a terminal's Ctrl-C reaches
// each of them once; SIGINT, SIGTERM or SIGHUP to the launcher is forwarded as SIGTERM (a rank that
// gets both within a second counts them as one stop request: app/commands/train.cpp),
// SIGUSR1 (checkpoint now) to every rank (rank 0 acts). A rank that fails: its exit is reported with the rank and
// the cause; a rank that exits with code 2 (bad input, a rendezvous problem) makes the
// launcher terminate the others at once; after a rank exited 1 (it found the fault: a lost
// peer) they get 5 s, after a rank died (a signal) --dist-timeout + 10 s, to notice and stop on
// their own (rank 0 saves), then SIGTERM, then SIGKILL 5 s later.
#include "app/commands/train.h"

#include "app/cli/cli.h"
#include "app/cli/flags.h"
#include "app/cli/format.h"
#include "core/dist/process_group.h"
#include "core/io/session.h"
#include "core/platform/blas.h"
#include "core/train/trainer.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

namespace mnemo::app {

namespace {

std::atomic<int> g_forward_term{0}, g_forward_usr1{0};
extern "C" void on_launcher_term(int) { g_forward_term.fetch_add(1); }
extern "C" void on_launcher_usr1(int) { g_forward_usr1.fetch_add(1); }

// This program's command line as it was started.
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  return args;
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  for (const auto& a : args)
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  return false;
}

// `args` without `flag` and its value ("--flag V" or "--flag=V").
std::vector<std::string> without(const std::vector<std::string>& args, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag) {
      ++i;
      continue;
    }
    if (args[i].rfind(flag + "=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : std::string());
  }
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace

int launch_local_ranks(const TrainOptions& c, std::ostream& out) {
  const int n = c.nproc;
  // What would make every rank exit 2 is checked here, before any rank starts.
  if (!c.resume) {
    if (c.config.empty()) throw UsageError("train: --config is required (e.g. sessions/copy-rmt.json)");
    TrainingConfig cfg = load_training_config(c.config, c.sets);
    check_out_dir(c.out.empty() ? io::default_session_dir(c.config, c.sessions) : c.out);
    if (cfg.train.batch < n)
      throw UsageError("--nproc " + std::to_string(n) + ": config field 'train.batch' = " +
                       std::to_string(cfg.train.batch) + " is smaller than the ranks; every rank trains on a share of "
                       "each global batch (use --nproc <= " + std::to_string(cfg.train.batch) + " or a larger batch)");
  } else if (c.out.empty()) {
    throw UsageError("--resume: pass the session directory with --out DIR");
  }
  if (!dist::has_gloo() && c.dist_backend == "gloo")
    throw UsageError("--nproc: this build has no Gloo backend (install libgloo-dev and rebuild)");
  if (!(c.dist_timeout >= 1 && c.dist_timeout <= 86400))
    throw UsageError("--dist-timeout " + std::to_string(c.dist_timeout) + " must be in 1..86400 seconds");

  std::string addr = "127.0.0.1";
  int port = 0;
  if (!c.master.empty()) {
    dist::parse_master(c.master, "--master", &addr, &port);
  } else if (const char* p = std::getenv("MASTER_PORT")) {
    port = std::atoi(p);
    if (port < 1 || port > 65535) throw UsageError(std::string("MASTER_PORT='") + p + "' must be in 1..65535");
  } else {
    port = dist::free_tcp_port(addr);
    if (port < 0) throw UsageError("--nproc: no free TCP port on " + addr + "; pass --master ADDR:PORT");
  }
  const std::string master = addr + ":" + std::to_string(port);

  std::vector<std::string> base = own_command_line();
  if (base.empty()) throw UsageError("--nproc: cannot read this program's command line (/proc/self/cmdline)");
  base[0] = "/proc/self/exe";
  const bool own_threads = has_flag(base, "--threads");
  base = without(without(base, "--nproc"), "--master");  // each rank gets the launcher's --master below
  const int threads = std::max(1, platform::cpu_cores() / n);
  if (!own_threads) base.insert(base.begin() + 1, {"--threads", std::to_string(threads)});
  out << "launching " << n << " ranks (master " << master << ", " << (own_threads ? std::string("--threads as given")
                                                                                  : std::to_string(threads) + " threads each")
      << ", timeout " << c.dist_timeout << " s)\n"
      << std::flush;

  struct sigaction sa {}, old_int {}, old_term {}, old_hup {}, old_usr1 {};
  sa.sa_handler = on_launcher_term;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  struct sigaction hup_now {};
  const bool hup = ::sigaction(SIGHUP, nullptr, &hup_now) == 0 && hup_now.sa_handler != SIG_IGN;  // not under nohup
  if (hup) ::sigaction(SIGHUP, &sa, &old_hup);
  struct sigaction su {};
  su.sa_handler = on_launcher_usr1;
  sigemptyset(&su.sa_mask);
  ::sigaction(SIGUSR1, &su, &old_usr1);
  g_forward_term = 0;
  g_forward_usr1 = 0;

  std::vector<pid_t> pids(static_cast<size_t>(n), -1);
  std::vector<int> status(static_cast<size_t>(n), 0);
  std::vector<bool> done(static_cast<size_t>(n), false);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> args = base;
    for (const std::string& a : {std::string("--rank"), std::to_string(r), std::string("--world-size"), std::to_string(n),
                                 std::string("--master"), master})
      args.push_back(a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The environment without RANK / WORLD_SIZE (the flags say it) and with LOCAL_RANK, built
    // before fork: between fork and exec only async-signal-safe calls.
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string v = *e;
      if (v.rfind("RANK=", 0) == 0 || v.rfind("WORLD_SIZE=", 0) == 0 || v.rfind("LOCAL_RANK=", 0) == 0) continue;
      env.push_back(v);
    }
    env.push_back("LOCAL_RANK=" + std::to_string(r));
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execve("/proc/self/exe", argv.data(), envp.data());
      const char msg[] = "mnemoscope: cannot start a rank\n";
      (void)!::write(2, msg, sizeof msg - 1);
      ::_exit(127);
    }
    if (pid < 0) {
      for (int k = 0; k < r; ++k) ::kill(pids[static_cast<size_t>(k)], SIGKILL);
      throw UsageError(std::string("--nproc: cannot start rank ") + std::to_string(r) + ": " + std::strerror(errno));
    }
    pids[static_cast<size_t>(r)] = pid;
  }

  using Clock = std::chrono::steady_clock;
  int alive = n, first_failed = -1, term_sent = 0, usr1_sent = 0;
  bool terminating = false;
  Clock::time_point kill_at = Clock::time_point::max();
  while (alive > 0) {
    int st = 0;
    const pid_t p = ::waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      for (int r = 0; r < n; ++r) {
        if (pids[static_cast<size_t>(r)] != p) continue;
        done[static_cast<size_t>(r)] = true;
        status[static_cast<size_t>(r)] = st;
        --alive;
        const bool ok = WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 130);
        if (!ok && !terminating) {
          std::cerr << "mnemoscope: rank " << r << " (pid " << p << ") " << exit_text(st) << "\n" << std::flush;
          if (first_failed < 0) {
            first_failed = r;
            // Bad input: the others wait in the rendezvous for nothing. A rank that exited 1 has
            // already found the fault (or the run failed): the others follow within seconds.
            // A rank that died: the others notice at once, or after the timeout when it hung them.
            const bool bad_input = WIFEXITED(st) && WEXITSTATUS(st) == 2;
            const bool noticed = WIFEXITED(st) && WEXITSTATUS(st) == 1;
            const int64_t grace_ms = bad_input ? 0 : noticed ? 5000 : static_cast<int64_t>(c.dist_timeout * 1000) + 10000;
            kill_at = Clock::now() + std::chrono::milliseconds(grace_ms);
          }
        }
      }
      continue;
    }
    if (p < 0 && errno != EINTR) break;
    while (term_sent < g_forward_term.load()) {
      ++term_sent;
      for (int r = 0; r < n; ++r)
        if (!done[static_cast<size_t>(r)]) ::kill(pids[static_cast<size_t>(r)], SIGTERM);
    }
    while (usr1_sent < g_forward_usr1.load()) {
      ++usr1_sent;
      for (int r = 0; r < n; ++r)
        if (!done[static_cast<size_t>(r)]) ::kill(pids[static_cast<size_t>(r)], SIGUSR1);
    }
    if (Clock::now() >= kill_at) {
      const int sig = terminating ? SIGKILL : SIGTERM;
      for (int r = 0; r < n; ++r)
        if (!done[static_cast<size_t>(r)]) ::kill(pids[static_cast<size_t>(r)], sig);
      terminating = true;
      kill_at = sig == SIGTERM ? Clock::now() + std::chrono::seconds(5) : Clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (hup) ::sigaction(SIGHUP, &old_hup, nullptr);
  ::sigaction(SIGUSR1, &old_usr1, nullptr);

  if (first_failed < 0) {
    bool stopped = false;
    for (int st : status) stopped = stopped || (WIFEXITED(st) && WEXITSTATUS(st) == 130);
    return stopped ? 130 : 0;
  }
  const int st = status[static_cast<size_t>(first_failed)];
  const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  if (code != 2) {
    // Advice that works when followed: a session rank 0 created resumes (from its latest
    // checkpoint, or from step 0 when it stopped before the first); before that, nothing
    // was written and the same command starts it again.
    const std::string dir = c.out.empty() ? io::default_session_dir(c.config, c.sessions) : c.out;
    out << "the job stopped: rank " << first_failed << " " << exit_text(st);
    if (::access((dir + "/manifest.json").c_str(), F_OK) == 0)
      out << "; continue with: mnemoscope train --out " << shell_quote(dir) << " --resume --nproc " << n << "\n";
    else
      out << "; no session was written to " << dir << ": run the same command again\n";
    out << std::flush;
  }
  return code;
}

}  // namespace mnemo::app
