// `mnemoscope train` as ranks of a distributed job (app/commands/train.cpp, train_launch.cpp;
// docs/training.md#distributed): --nproc, a rank killed or stopped mid-run and the resume
// after it, and launch problems that exit 2 writing nothing. Loopback only, bounded times.
#include "core/dist/process_group.h"
#include "core/io/framed_log.h"
#include "core/io/session.h"
#include "core/train/run_log.h"
#include "core/train/trainer.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

using namespace mnemo;

namespace {

using Clock = std::chrono::steady_clock;

// Writes `j` to `path` and returns the path.
std::string write_config(const std::string& path, const nlohmann::json& j) {
  std::ofstream(path) << j.dump(2);
  return path;
}

std::string tiny_config_file(const std::string& dir, int steps, int save_every) {
  auto j = test::tiny_copy_run(
      nlohmann::json::parse(R"({"steps": 6, "batch": 4, "lr": 1e-2, "warmup": 2, "schedule": "linear",
    "clip": 1.0, "eval_every": 0, "eval_batches": 1, "record_every": 0, "seed": 4})"));
  j["task"].update({{"train_size", 4096}, {"valid_size", 8}, {"test_size", 8}});
  j["train"]["steps"] = steps;
  j["train"]["save_every"] = save_every;
  return write_config(dir + "/tiny.json", j);
}

RunLog read_log(const std::string& session) {
  std::vector<nlohmann::json> recs;
  for (const auto& r : io::read_framed_log(session + "/metrics.log").records) recs.push_back(nlohmann::json::parse(r));
  return parse_run_log(recs);
}

// The steps of the step records, in order (after a resume's drops).
std::vector<int64_t> step_numbers(const RunLog& log) {
  std::vector<int64_t> s;
  for (const auto& r : log.steps) s.push_back(r.at("step").get<int64_t>());
  return s;
}

// Starts the built program with `args`, stdout and stderr to `log` (in a process group of its
// own with new_group); returns its pid.
pid_t spawn(const std::vector<std::string>& args, const std::string& log, bool new_group = false) {
  std::vector<std::string> all = {MNEMO_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (new_group) ::setpgid(0, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

// Waits up to `limit` for pid; returns its status, or -1 (then it was killed).
int wait_for(pid_t pid, std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  int st = 0;
  while (Clock::now() < end) {
    if (::waitpid(pid, &st, WNOHANG) == pid) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &st, 0);
  return -1;
}

// Waits until the session has at least `n` step records (false after `limit`).
bool wait_steps(const std::string& session, size_t n, std::chrono::seconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (test::path_exists(session + "/metrics.log") && read_log(session).steps.size() >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The pid of the process whose command line holds `out` and "--rank R" (-1 when none).
pid_t find_rank(const std::string& out, int rank) {
  DIR* d = ::opendir("/proc");
  if (!d) return -1;
  pid_t found = -1;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = test::read_file("/proc/" + name + "/cmdline");
    std::vector<std::string> args;
    for (size_t a = 0, b; a < cmd.size(); a = b + 1) {
      b = cmd.find('\0', a);
      if (b == std::string::npos) b = cmd.size();
      args.push_back(cmd.substr(a, b - a));
    }
    bool has_out = false, has_rank = false;
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      has_out = has_out || (args[i] == "--out" && args[i + 1] == out);
      has_rank = has_rank || (args[i] == "--rank" && args[i + 1] == std::to_string(rank));
    }
    if (has_out && has_rank) found = static_cast<pid_t>(std::stol(name));
  }
  ::closedir(d);
  return found;
}

std::vector<std::string> rank_args(const std::string& cfg, const std::string& out, int rank, int port, int timeout) {
  return {"--threads", "1", "train", "--config", cfg, "--out", out, "--rank", std::to_string(rank), "--world-size", "2",
          "--master", "127.0.0.1:" + std::to_string(port), "--dist-timeout", std::to_string(timeout)};
}

}  // namespace

TEST_CASE("cli: train --nproc 2 trains like one process, rank 0 records world size and per-rank throughput, resume "
          "with another N continues the curve") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  const std::string dir = test::temp_dir("dist-nproc");
  const std::string cfg = tiny_config_file(dir, 6, 3);
  auto one = test::run_cli("--threads 1 train --config " + cfg + " --out " + dir + "/one");
  REQUIRE_MESSAGE(one.code == 0, one.output);
  auto two = test::run_cli("train --nproc 2 --config " + cfg + " --out " + dir + "/two --dist-timeout 30");
  INFO(two.output);
  REQUIRE(two.code == 0);
  CHECK(two.output.find("launching 2 ranks (master 127.0.0.1:") != std::string::npos);
  CHECK(two.output.find("distributed: 2 ranks (gloo") != std::string::npos);
  CHECK(two.output.find("step 6/6") != std::string::npos);
  // Only rank 0 prints the progress: one "step 6/6" line.
  CHECK(two.output.find("step 6/6") == two.output.rfind("step 6/6"));

  const RunLog a = read_log(dir + "/one"), b = read_log(dir + "/two");
  REQUIRE(a.steps.size() == 6);
  REQUIRE(b.steps.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(b.steps[i]["loss"].get<double>() == doctest::Approx(a.steps[i]["loss"].get<double>()).epsilon(1e-4));
    CHECK(a.steps[i]["world_size"] == 1);
    CHECK(b.steps[i]["world_size"] == 2);
    CHECK(b.steps[i]["rank_tokens_per_s"].size() == 2);
    CHECK(b.steps[i]["rank_tokens_per_s"][1].get<double>() > 0);
    CHECK(b.steps[i]["allreduce_seconds"].get<double>() >= 0);
  }
  const DistributedStatus st = b.distributed_status();
  CHECK(st.world_size == 2);
  CHECK(st.step == 6);
  CHECK((st.slowest_rank == 0 || st.slowest_rank == 1));
  CHECK(b.curves("rank-tokens-per-s").size() == 2);
  CHECK(a.curves("rank-tokens-per-s").empty());
  for (const auto* f : {"/two/checkpoints/step-000000003.safetensors", "/two/checkpoints/step-000000006.safetensors"})
    CHECK(test::path_exists(dir + f));

  // Resume the 2-rank session in one process (a different N): the curve goes on.
  auto res = test::run_cli("--threads 1 train --out " + dir + "/two --resume --steps 9");
  INFO(res.output);
  CHECK(res.code == 0);
  // A longer run stretches the linear decay: said, not silent.
  CHECK(res.output.find("note: --steps 9 changes the learning-rate schedule: linear decay over 9 steps instead of the 6")
        != std::string::npos);
  const RunLog c = read_log(dir + "/two");
  CHECK(step_numbers(c) == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(c.steps.back()["world_size"] == 1);
}

TEST_CASE("cli: a killed rank is named by the survivor within the timeout, a stopped one after it, resume has no gap") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  const std::string dir = test::temp_dir("dist-kill");
  const std::string cfg = tiny_config_file(dir, 100000, 3);
  const std::string out = dir + "/run";
  const int timeout = 20;
  {
    const int port = dist::free_tcp_port();
    const pid_t r0 = spawn(rank_args(cfg, out, 0, port, timeout), dir + "/r0.log");
    const pid_t r1 = spawn(rank_args(cfg, out, 1, port, timeout), dir + "/r1.log");
    REQUIRE(wait_steps(out, 5, std::chrono::seconds(120)));
    ::kill(r1, SIGKILL);
    const auto t0 = Clock::now();
    const int st = wait_for(r0, std::chrono::seconds(timeout + 30));
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    wait_for(r1, std::chrono::seconds(5));
    const std::string log0 = test::read_file(dir + "/r0.log");
    INFO(log0);
    REQUIRE(st != -1);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 1);
    CHECK(secs < timeout);  // a killed peer is noticed at once, not after the timeout
    CHECK(log0.find("rank 0: rank 1 stopped responding") != std::string::npos);
    CHECK(log0.find("continue with: mnemoscope train --out " + out + " --resume") != std::string::npos);
    const RunLog log = read_log(out);
    REQUIRE(!log.errors.empty());
    CHECK(log.errors.back()["message"].get<std::string>().find("rank 1") != std::string::npos);
  }
  const int64_t reached = read_log(out).steps.back()["step"].get<int64_t>();
  {
    // Resume with 2 ranks again; then stop rank 1 (SIGSTOP: hung): rank 0 gives up after the timeout.
    const int port = dist::free_tcp_port();
    const int short_timeout = 4;
    auto args0 = rank_args(cfg, out, 0, port, short_timeout), args1 = rank_args(cfg, out, 1, port, short_timeout);
    for (auto* a : {&args0, &args1}) {
      a->push_back("--resume");
      a->push_back("--steps");
      a->push_back(std::to_string(reached + 100000));
    }
    const pid_t r0 = spawn(args0, dir + "/r0b.log");
    const pid_t r1 = spawn(args1, dir + "/r1b.log");
    REQUIRE(wait_steps(out, static_cast<size_t>(reached) + 2, std::chrono::seconds(120)));
    ::kill(r1, SIGSTOP);
    const auto t0 = Clock::now();
    const int st = wait_for(r0, std::chrono::seconds(short_timeout + 60));
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    ::kill(r1, SIGKILL);
    wait_for(r1, std::chrono::seconds(5));
    const std::string log0 = test::read_file(dir + "/r0b.log");
    INFO(log0);
    CHECK(log0.find("resuming " + out + " from step") != std::string::npos);
    REQUIRE(st != -1);
    CHECK(WEXITSTATUS(st) == 1);
    CHECK(log0.find("rank 0: rank 1 stopped responding") != std::string::npos);
    CHECK(secs >= short_timeout - 1);  // it waited for the timeout: a stopped rank may come back
    CHECK(secs < short_timeout + 15);
  }
  // Resume once more, one process: the steps are contiguous, each once.
  const int64_t reached2 = read_log(out).steps.back()["step"].get<int64_t>();
  CHECK(reached2 > reached);
  auto res = test::run_cli("--threads 1 train --out " + out + " --resume --steps " + std::to_string(reached2 + 3));
  INFO(res.output);
  CHECK(res.code == 0);
  std::vector<int64_t> expect;
  for (int64_t s = 1; s <= reached2 + 3; ++s) expect.push_back(s);
  CHECK(step_numbers(read_log(out)) == expect);
}

TEST_CASE("cli: train --nproc 2 with a rank killed: the launcher names it, rank 0 saves and names it, exit 1") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  const std::string dir = test::temp_dir("dist-launch-kill");
  const std::string cfg = tiny_config_file(dir, 100000, 0);
  const std::string out = dir + "/run";
  const pid_t launcher = spawn({"train", "--nproc", "2", "--config", cfg, "--out", out, "--dist-timeout", "20"},
                               dir + "/launcher.log");
  REQUIRE(wait_steps(out, 5, std::chrono::seconds(120)));
  const pid_t r1 = find_rank(out, 1);
  REQUIRE(r1 > 0);
  ::kill(r1, SIGKILL);
  const auto t0 = Clock::now();
  const int st = wait_for(launcher, std::chrono::seconds(60));
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string log = test::read_file(dir + "/launcher.log");
  INFO(log);
  REQUIRE(st != -1);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 1);
  CHECK(secs < 20);  // rank 0 notices at once; nothing waits for the timeout
  CHECK(log.find("mnemoscope: rank 1 (pid " + std::to_string(r1) + ") was killed by signal 9") != std::string::npos);
  CHECK(log.find("rank 0: rank 1 stopped responding") != std::string::npos);
  CHECK(log.find("continue with: mnemoscope train --out " + out + " --resume") != std::string::npos);
  CHECK(find_rank(out, 0) == -1);  // no rank left behind
  // The last step every rank completed is saved and is where the log ends.
  const int64_t last = read_log(out).steps.back()["step"].get<int64_t>();
  char name[64];
  std::snprintf(name, sizeof name, "step-%09lld.safetensors", static_cast<long long>(last));
  CHECK(test::read_file(out + "/checkpoints/latest").find(name) == 0);
}

TEST_CASE("cli: train --nproc 2 stopped by SIGTERM to its whole process group: every rank stops after one step, saved, exit 130") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  // A scheduler signals every process; the launcher forwards its copy too: each rank counts
  // the two SIGTERMs as one stop request instead of dying on the second.
  const std::string dir = test::temp_dir("dist-group-term");
  const std::string cfg = tiny_config_file(dir, 100000, 0);
  const std::string out = dir + "/run";
  const pid_t launcher = spawn({"train", "--nproc", "2", "--config", cfg, "--out", out, "--dist-timeout", "20"},
                               dir + "/launcher.log", true);
  REQUIRE(wait_steps(out, 5, std::chrono::seconds(120)));
  ::kill(-launcher, SIGTERM);
  const int st = wait_for(launcher, std::chrono::seconds(60));
  const std::string log = test::read_file(dir + "/launcher.log");
  INFO(log);
  REQUIRE(st != -1);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 130);
  CHECK(log.find("was killed by signal") == std::string::npos);
  CHECK(log.find("interrupted at step") != std::string::npos);
  const int64_t last = read_log(out).steps.back()["step"].get<int64_t>();
  char name[64];
  std::snprintf(name, sizeof name, "step-%09lld.safetensors", static_cast<long long>(last));
  CHECK(test::read_file(out + "/checkpoints/latest").find(name) == 0);
}

TEST_CASE("cli: bad launch variables, a taken port, no master, a rank that never starts: exit 2, nothing written") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  const std::string dir = test::temp_dir("dist-bad");
  const std::string cfg = tiny_config_file(dir, 6, 0);
  const std::string out = dir + "/run";
  auto expect2 = [&](const std::string& cmd, const std::string& needle) {
    auto r = test::run_cli(cmd);
    INFO(cmd);
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find(needle) != std::string::npos);
    CHECK_FALSE(test::path_exists(out));
  };
  const std::string base = "train --config " + cfg + " --out " + out;
  auto env_check = [&](const std::string& env, const std::string& needle) {  // run_cli with variables set
    const std::string cmd = env + " " + std::string(MNEMO_BINARY) + " --threads 1 " + base;
    auto r = test::run_shell(cmd);
    INFO(cmd);
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find(needle) != std::string::npos);
    CHECK_FALSE(test::path_exists(out));
  };
  env_check("WORLD_SIZE=2 RANK=5", "RANK='5'");
  env_check("WORLD_SIZE=x RANK=0", "WORLD_SIZE='x'");
  env_check("WORLD_SIZE=2 RANK=1 MASTER_PORT=0", "MASTER_PORT='0'");
  env_check("WORLD_SIZE=2", "RANK is not");
  expect2(base + " --rank 1", "--rank 1 needs --world-size");
  expect2(base + " --rank 0 --world-size 2 --master 127.0.0.1", "--master '127.0.0.1' must be ADDR:PORT");
  expect2(base + " --rank 2 --world-size 2", "--rank = 2 is out of range 0..1");
  expect2(base + " --rank 0 --world-size 2 --dist-timeout 0", "--dist-timeout");
  expect2("train --nproc 5 --config " + cfg + " --out " + out, "train.batch' = 4 is smaller than the ranks");
  expect2(base + " --nproc 2 --rank 0 --world-size 2", "--nproc starts its own ranks");

  // A port in use.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int taken = ntohs(a.sin_port);
  expect2(base + " --rank 0 --world-size 2 --dist-timeout 3 --master 127.0.0.1:" + std::to_string(taken),
          "port " + std::to_string(taken) + " (--master) is in use");
  ::close(fd);
  // No master: rank 1 gives up after the timeout.
  const int nobody = dist::free_tcp_port();
  expect2(base + " --rank 1 --world-size 2 --dist-timeout 2 --master 127.0.0.1:" + std::to_string(nobody),
          "cannot reach the master at 127.0.0.1:" + std::to_string(nobody));
  // Rank 1 never starts: rank 0 names it after the timeout.
  const int lonely = dist::free_tcp_port();
  const auto t0 = Clock::now();
  expect2(base + " --rank 0 --world-size 2 --dist-timeout 2 --master 127.0.0.1:" + std::to_string(lonely),
          "rank 1 never joined the rendezvous");
  CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 30);
}

// ---- Killed at a random step, continued by the command the program printed (issue: nothing lost) ----
namespace {

// A run long enough to be killed at any step, checkpointed only at its evaluations (the
// default save_at_eval), so a kill before the first one exercises resuming from step 0.
std::string crash_config_file(const std::string& dir) {
  auto j = nlohmann::json::parse(R"({
    "model": {"model": "rmt", "slots": 2, "segment_len": 8, "dim": 32, "heads": 2, "layers": 1, "ff": 64},
    "task": {"name": "copy", "source_len": 4, "symbols": 6, "segments": 2, "train_size": 4096, "valid_size": 8, "test_size": 8},
    "train": {"steps": 36, "batch": 8, "lr": 1e-2, "warmup": 2, "schedule": "linear", "clip": 1.0,
              "eval_every": 8, "eval_batches": 1, "record_every": 0, "seed": 4}
  })");
  return write_config(dir + "/crash.json", j);
}

// The metrics a finished run ends on: its last step's loss and every final evaluation.
std::vector<double> end_metrics(const RunLog& log) {
  std::vector<double> out;
  if (log.steps.empty()) return out;
  out.push_back(log.steps.back()["loss"].get<double>());
  for (const auto& e : log.evals)
    if (e.value("final", false)) out.push_back(e["loss"].get<double>());
  return out;
}

// The last "continue with: mnemoscope ..." command in `text` (without "mnemoscope "), or ""
// for "run the same command again" (then `same` is returned).
std::string printed_command(const std::string& text, const std::string& same) {
  const std::string key = "continue with: mnemoscope ";
  const auto p = text.rfind(key);
  if (p == std::string::npos) return text.find("run the same command again") != std::string::npos ? same : "";
  const auto e = text.find('\n', p);
  return text.substr(p + key.size(), e == std::string::npos ? std::string::npos : e - p - key.size());
}

// Kills `victim` (0 or 1; with nproc 1 the only process) once the run has logged `at` steps,
// then runs the command the program printed (one process: the documented resume, since a
// SIGKILL leaves nothing printed) until the run is done; returns the metrics it ends on.
std::vector<double> kill_and_continue(const std::string& cfg, const std::string& out, const std::string& logs, int nproc,
                                      int victim, size_t at) {
  const std::string same = "--threads 1 train --config " + cfg + " --out " + out +
                           (nproc > 1 ? " --nproc " + std::to_string(nproc) + " --dist-timeout 20" : std::string());
  std::vector<std::string> args = {"--threads", "1", "train", "--config", cfg, "--out", out};
  if (nproc > 1) args.insert(args.end(), {"--nproc", std::to_string(nproc), "--dist-timeout", "20"});
  const pid_t top = spawn(args, logs + ".run.log");
  pid_t target = top;
  if (nproc > 1) {
    const auto end = Clock::now() + std::chrono::seconds(60);
    while ((target = find_rank(out, victim)) <= 0 && Clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(target > 0);
  }
  if (at > 0) REQUIRE(wait_steps(out, at, std::chrono::seconds(120)));
  ::kill(target, SIGKILL);
  const int st = wait_for(top, std::chrono::seconds(90));
  REQUIRE(st != -1);
  const std::string text = test::read_file(logs + ".run.log");
  INFO(text);
  // One process killed prints nothing: the documented resume, or, when it died before writing
  // its session, the same command again (what `--resume` on a folder with no session advises).
  std::string cmd = nproc > 1 ? printed_command(text, same)
                    : test::path_exists(out + "/manifest.json") ? "--threads 1 train --out " + out + " --resume"
                                                                : same;
  REQUIRE_MESSAGE(!cmd.empty(), "no advice printed after the kill");
  // The printed command must work as printed: run it (a second kill is not part of the trial).
  if (cmd.rfind("train ", 0) == 0) cmd = "--threads 1 " + cmd;
  auto r = test::run_cli(cmd);
  INFO(cmd);
  INFO(r.output);
  REQUIRE(r.code == 0);
  return end_metrics(read_log(out));
}

void crash_trials(int nproc, int victim, uint32_t seed) {
  if (nproc > 1 && !dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  const std::string dir = test::temp_dir("crash-" + std::to_string(nproc) + "-" + std::to_string(victim));
  const std::string cfg = crash_config_file(dir);
  // The uninterrupted run's metrics depend on the config (the same for every victim) and nproc
  // only, so the rank-0 and rank-1 tests share one run of `--nproc 2` when both run in this
  // process (a launcher and two ranks fewer); each computes it when run alone.
  static std::map<int, std::vector<double>> uninterrupted;
  if (!uninterrupted.count(nproc)) {
    std::string base = "--threads 1 train --config " + cfg + " --out " + dir + "/whole";
    if (nproc > 1) base += " --nproc " + std::to_string(nproc) + " --dist-timeout 20";
    auto whole = test::run_cli(base);
    REQUIRE_MESSAGE(whole.code == 0, whole.output);
    const std::vector<double> metrics = end_metrics(read_log(dir + "/whole"));
    REQUIRE(metrics.size() == 5);  // the last step; the final valid and test evaluations, each also with memory zeroed
    uninterrupted[nproc] = metrics;
  }
  const std::vector<double> expect = uninterrupted[nproc];
  // One kill in each stretch between checkpoints (the run saves at steps 8, 16, 24, 32, 36):
  // at once (0: as soon as the process exists, before its session), then a random step in
  // 1-7, 8-15, 16-23 and 24-30; MNEMO_CRASH_TRIALS=N runs N trials, those past these five at random steps in 0-30.
  const std::vector<std::pair<size_t, size_t>> strata = {{0, 0}, {1, 7}, {8, 15}, {16, 23}, {24, 30}};
  const char* extra_env = std::getenv("MNEMO_CRASH_TRIALS");
  const int trials = std::max(static_cast<int>(strata.size()), extra_env ? std::atoi(extra_env) : 0);
  std::mt19937 rng(seed);
  for (int t = 0; t < trials; ++t) {
    const auto range = t < static_cast<int>(strata.size()) ? strata[t] : std::pair<size_t, size_t>{0, 30};
    const size_t at = std::uniform_int_distribution<size_t>(range.first, range.second)(rng);
    const std::string out = dir + "/t" + std::to_string(t);
    CAPTURE(t);
    CAPTURE(at);
    const std::vector<double> got = kill_and_continue(cfg, out, out, nproc, victim, at);
    REQUIRE(got.size() == expect.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expect[i]).epsilon(1e-5));
    // Each step once, in order, after the resume's drops.
    std::vector<int64_t> all;
    for (int64_t s = 1; s <= 36; ++s) all.push_back(s);
    CHECK(step_numbers(read_log(out)) == all);
  }
}

}  // namespace

TEST_CASE("cli: one process killed (SIGKILL) once between each two checkpoints: `train --out DIR --resume` ends on the uninterrupted "
          "run's metrics") {
  crash_trials(1, 0, 11);
}

TEST_CASE("cli: --nproc 2 with rank 0 killed once between each two checkpoints: the printed command ends on the uninterrupted run's "
          "metrics") {
  crash_trials(2, 0, 12);
}

TEST_CASE("cli: --nproc 2 with rank 1 killed once between each two checkpoints: the printed command ends on the uninterrupted run's "
          "metrics") {
  crash_trials(2, 1, 13);
}

TEST_CASE("cli: a run killed while writing its final evaluations: --resume writes them once, a second --resume has "
          "nothing to do") {
  // The kill is placed exactly: a finished session is copied with its log cut after the
  // first final evaluation (what a SIGKILL between two final records leaves).
  const std::string dir = test::temp_dir("crash-finals");
  const std::string cfg = crash_config_file(dir);
  auto whole = test::run_cli("--threads 1 train --config " + cfg + " --out " + dir + "/whole");
  REQUIRE_MESSAGE(whole.code == 0, whole.output);
  const std::vector<double> expect = end_metrics(read_log(dir + "/whole"));
  REQUIRE(expect.size() == 5);
  const auto src = io::Session::open(dir + "/whole", 3, io::SessionAccess::kReadOnly);
  std::vector<nlohmann::json> records = src.read_metrics();
  size_t first_final = records.size();
  for (size_t i = 0; i < records.size(); ++i)
    if (records[i].value("final", false)) {
      first_final = i;
      break;
    }
  REQUIRE(first_final + 4 == records.size());
  records.resize(first_final + 1);
  nlohmann::json manifest = nlohmann::json::parse(test::read_file(dir + "/whole/manifest.json"));
  auto cut = io::Session::create(dir + "/cut", manifest);
  for (const auto& r : records) cut.append_metrics(r);
  std::filesystem::copy(dir + "/whole/checkpoints", dir + "/cut/checkpoints",
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  REQUIRE(end_metrics(read_log(dir + "/cut")).size() == 2);

  auto r = test::run_cli("--threads 1 train --out " + dir + "/cut --resume");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("writing its final evaluations") != std::string::npos);
  const std::vector<double> got = end_metrics(read_log(dir + "/cut"));
  REQUIRE(got.size() == expect.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expect[i]).epsilon(1e-5));
  auto again = test::run_cli("--threads 1 train --out " + dir + "/cut --resume");
  INFO(again.output);
  CHECK(again.code == 0);
  CHECK(again.output.find("already at step 36 of 36") != std::string::npos);
  CHECK(end_metrics(read_log(dir + "/cut")).size() == expect.size());
}

TEST_CASE("cli: --nproc 0 and -1 are refused before anything is written - --nproc 2 --master ADDR:PORT uses that port") {
  const std::string dir = test::temp_dir("dist-nproc-flags");
  const std::string cfg = tiny_config_file(dir, 2, 0);
  for (const char* n : {"0", "-1"}) {
    auto r = test::run_cli("train --nproc " + std::string(n) + " --config " + cfg + " --out " + dir + "/run");
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("--nproc " + std::string(n) + " must be in 1..1024") != std::string::npos);
    CHECK_FALSE(test::path_exists(dir + "/run"));
  }
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  const int port = dist::free_tcp_port();
  auto r = test::run_cli("train --nproc 2 --master 127.0.0.1:" + std::to_string(port) + " --config " + cfg + " --out " +
                         dir + "/two --dist-timeout 30");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("launching 2 ranks (master 127.0.0.1:" + std::to_string(port)) != std::string::npos);
  CHECK(r.output.find("At Most 1 required") == std::string::npos);
}
