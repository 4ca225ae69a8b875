// Trainer (core/train/trainer.h): config validation by field name, schedules, metrics,
// checkpoint save -> load -> resume, NaN stop, stop flag, and the train/eval CLI.
#include "core/io/safetensors.h"
#include "core/io/session.h"
#include "core/models/factory.h"
#include "core/train/run_log.h"
#include "core/train/trainer.h"
#include "tests/support/cli_here.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"
#include "core/io/atomic_file.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <chrono>

using namespace mnemo;

namespace {
TrainingConfig tiny_config(const std::string& model = "rmt") {
  return TrainingConfig::from_json(test::tiny_copy_run(nlohmann::json::parse(R"({
    "steps": 6, "batch": 4, "lr": 1e-2, "warmup": 2, "schedule": "linear", "clip": 1.0, "bptt_depth": -1,
    "eval_every": 2, "eval_batches": 2, "save_every": 3, "seed": 4})"),
                                                       model));
}

// tiny_config() written to DIR/tiny.json, for the command line; returns the path.
std::string write_tiny_config(const std::string& dir) {
  const std::string cfg = dir + "/tiny.json";
  std::ofstream(cfg) << tiny_config().to_json().dump(2);
  return cfg;
}
}  // namespace

TEST_CASE("training config: bad fields are rejected by name") {
  auto rejects = [](const std::function<void(nlohmann::json&)>& edit, const char* needle) {
    auto j = tiny_config().to_json();
    edit(j);
    try {
      TrainingConfig::from_json(j);
      FAIL("accepted " << j.dump());
    } catch (const ConfigError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
  };
  rejects([](auto& j) { j["train"]["lr"] = 0; }, "train.lr");
  rejects([](auto& j) { j["train"]["lr"] = "fast"; }, "train.lr");
  rejects([](auto& j) { j["train"]["steps"] = 0; }, "train.steps");
  rejects([](auto& j) { j["train"]["batch"] = 1.5; }, "train.batch");
  rejects([](auto& j) { j["train"]["schedule"] = "step"; }, "train.schedule");
  rejects([](auto& j) { j["train"]["bptt_depth"] = -2; }, "train.bptt_depth");
  rejects([](auto& j) { j["train"]["strategy"] = "magic"; }, "train.strategy");
  rejects([](auto& j) {
    j["train"]["strategy"] = "mrbp";
    j["train"]["bptt_depth"] = 1;
  }, "train.strategy");
  rejects([](auto& j) { j["train"]["eval_batches"] = 0; }, "train.eval_batches");
  rejects([](auto& j) { j["train"]["clip"] = -1; }, "train.clip");
  rejects([](auto& j) { j["train"]["momentum"] = 0.9; }, "train.momentum");
  rejects([](auto& j) { j["model"]["dim"] = 15; }, "model.dim");
  rejects([](auto& j) { j["model"]["widht"] = 15; }, "model.widht");
  rejects([](auto& j) { j["model"]["segment_len"] = 4; }, "model.segment_len");
  rejects([](auto& j) { j["task"]["name"] = "sort"; }, "task.name");
  rejects([](auto& j) { j.erase("task"); }, "'task' is missing");
  rejects([](auto& j) { j["optimizer"] = "sgd"; }, "'optimizer' is unknown");
  auto c = tiny_config();
  CHECK(TrainingConfig::from_json(c.to_json()).to_json() == c.to_json());
}

TEST_CASE("schedules: warm-up then constant, linear or cosine decay") {
  ScheduleOptions o;
  o.lr = 1.0;
  o.warmup = 4;
  o.total = 14;
  o.kind = "linear";
  CHECK(learning_rate_at(o, 0) == doctest::Approx(0.25));
  CHECK(learning_rate_at(o, 3) == doctest::Approx(1.0));
  CHECK(learning_rate_at(o, 4) == doctest::Approx(1.0));
  CHECK(learning_rate_at(o, 9) == doctest::Approx(0.5));
  CHECK(learning_rate_at(o, 14) == doctest::Approx(0.0));
  o.kind = "cosine";
  o.min_lr_ratio = 0.1;
  CHECK(learning_rate_at(o, 9) == doctest::Approx(0.55));
  CHECK(learning_rate_at(o, 14) == doctest::Approx(0.1));
  o.kind = "constant";
  CHECK(learning_rate_at(o, 13) == doctest::Approx(1.0));
}

TEST_CASE("metrics: per-character accuracy and exact match on scored positions") {
  auto pred = torch::tensor({{1, 2, 3}, {1, 9, 3}}, torch::kInt64);
  auto tgt = torch::tensor({{1, 2, 3}, {1, 2, 3}}, torch::kInt64);
  auto scored = torch::tensor({{false, true, true}, {false, true, true}});
  auto s = score_predictions({pred}, {tgt}, {scored});
  CHECK(s.chars == 4);
  CHECK(s.correct == 3);
  CHECK(s.exact == 1);
  CHECK(s.accuracy() == doctest::Approx(0.75));
  CHECK(s.exact_match() == doctest::Approx(0.5));
}

TEST_CASE("trainer: checkpoint save -> load -> resume continues with the identical next-step loss") {
  for (const char* kind : {"rmt", "trxl", "transformer"}) {
    CAPTURE(kind);
    const std::string dir = test::temp_dir("ckpt");
    Trainer a(tiny_config(kind));
    for (int i = 0; i < 3; ++i) CHECK_FALSE(a.train_step().non_finite);
    save_checkpoint(dir + "/c.safetensors", a.checkpoint());
    auto next_a = a.train_step();
    auto after_a = a.train_step();

    Trainer b(tiny_config(kind));
    b.restore(load_checkpoint(dir + "/c.safetensors"), "c.safetensors");
    CHECK(b.step() == 3);
    auto next_b = b.train_step();
    auto after_b = b.train_step();
    CHECK(next_b.loss == next_a.loss);
    CHECK(next_b.lr == next_a.lr);
    CHECK(after_b.loss == after_a.loss);  // the optimizer state came back too
    // The checkpoint holds weights, AdamW state, the step and the config.
    std::map<std::string, std::string> meta;
    auto t = io::load_safetensors(dir + "/c.safetensors", &meta);
    CHECK(meta.at("step") == "3");
    CHECK(nlohmann::json::parse(meta.at("config")) == tiny_config(kind).to_json());
    bool has_optim = false;
    for (auto& [n, v] : t) has_optim = has_optim || n.rfind("optim.", 0) == 0;
    CHECK(has_optim);
    // A checkpoint is usable as plain weights.
    auto m = make_model(tiny_config(kind).model, 9);
    load_weights(*m, model_weights_only(t), "c");
  }
  // Another model config is refused by name.
  const std::string dir = test::temp_dir("ckpt2");
  Trainer a(tiny_config("rmt"));
  save_checkpoint(dir + "/c.safetensors", a.checkpoint());
  auto other = tiny_config("rmt");
  other.model.slots = 3;
  Trainer b(other);
  CHECK_THROWS_WITH_AS(b.restore(load_checkpoint(dir + "/c.safetensors"), "c"),
                       doctest::Contains("pass the config it was trained with"), ConfigError);
}

TEST_CASE("load_matching_weights: a Transformer-XL's layers into an RMT of the same size, the rest left as they were") {
  ModelConfig xl, rmt;
  xl.model = "trxl";
  rmt.model = "rmt";
  for (ModelConfig* c : {&xl, &rmt}) {
    c->slots = 4;
    c->segment_len = 6;
    c->dim = 16;
    c->heads = 2;
    c->layers = 2;
    c->ff = 32;
  }
  auto from = make_model(xl, 3), to = make_model(rmt, 4), before = make_model(rmt, 4);
  const auto given = named_weights(*from);
  const auto m = load_matching_weights(*to, given, "xl.safetensors");
  std::map<std::string, torch::Tensor> g(given.begin(), given.end()), b;
  for (const auto& [n, t] : named_weights(*before)) b[n] = t;
  REQUIRE_FALSE(m.taken.empty());
  REQUIRE_FALSE(m.fresh.empty());  // RMT's memory tokens are not in a Transformer-XL
  size_t checked = 0;
  for (const auto& [n, t] : named_weights(*to)) {
    CAPTURE(n);
    // What an RMT has and a Transformer-XL of the same size has not: its memory.
    const bool rmt_only = n == "memory_init" || n == "read_emb" || n == "write_emb" || n.rfind("mem_norm.", 0) == 0;
    const bool taken = std::find(m.taken.begin(), m.taken.end(), n) != m.taken.end();
    const bool fresh = std::find(m.fresh.begin(), m.fresh.end(), n) != m.fresh.end();
    CHECK(taken != fresh);  // each tensor of the model is in exactly one list
    if (taken) {
      CHECK(torch::equal(t, g.at(n)));
      CHECK_FALSE(rmt_only);
    } else {
      CHECK(rmt_only);
      CHECK(torch::equal(t, b.at(n)));  // as the seed made it
      const bool absent_or_other_shape = g.count(n) == 0 || g.at(n).sizes() != t.sizes();
      CHECK(absent_or_other_shape);
    }
    ++checked;
  }
  CHECK(checked == m.taken.size() + m.fresh.size());
  for (const auto& n : m.unused) CHECK(std::find(m.taken.begin(), m.taken.end(), n) == m.taken.end());
  CHECK(m.taken.size() + m.unused.size() == given.size());
  // A shape that differs is not taken: the layers of a wider model.
  ModelConfig wide = xl;
  wide.dim = 32;
  wide.ff = 64;
  auto w = make_model(wide, 3);
  auto to2 = make_model(rmt, 4);
  const auto m2 = load_matching_weights(*to2, named_weights(*w), "wide");
  for (const auto& n : m2.taken) CAPTURE(n);
  CHECK(m2.taken.size() < m.taken.size());
  // Nothing in common: refused, the model unchanged.
  std::vector<std::pair<std::string, torch::Tensor>> none = {{"not.a.tensor", torch::zeros({2})}};
  CHECK_THROWS_WITH_AS(load_matching_weights(*to2, none, "other.safetensors"),
                       doctest::Contains("other.safetensors: no tensor has the name and shape"), ConfigError);
}

TEST_CASE("trainer: run evaluates and saves on schedule, honours the stop flag, stops on NaN with the step") {
  Trainer t(tiny_config());
  std::vector<int64_t> evals, saves, steps;
  TrainCallbacks cb;
  cb.on_step = [&](const StepMetrics& m) {
    steps.push_back(m.step);
    CHECK(std::isfinite(m.loss));
    CHECK(m.lr > 0);
    CHECK(m.tokens_per_s > 0);
    CHECK(m.accuracy >= 0);
  };
  cb.on_eval = [&](const EvalMetrics& e) {
    if (!e.zero_memory) evals.push_back(e.step);  // each evaluation also runs with memory zeroed
    CHECK(e.examples == 8);
  };
  cb.on_save = [&](int64_t s) { saves.push_back(s); };
  auto o = t.run(cb);
  CHECK(o.steps_done == 6);
  CHECK(steps == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  CHECK(evals == std::vector<int64_t>{2, 4, 6});
  CHECK(saves == std::vector<int64_t>{2, 3, 4, 6});  // every save_every (3) and, by default, every evaluation

  // Only by step count (save_at_eval off); then by wall time alone: a checkpoint after every step
  // once save_every_seconds has passed, none with it at 0.
  for (const auto& [at_eval, seconds, expect] :
       {std::tuple<bool, double, std::vector<int64_t>>{false, 600.0, {3, 6}},
        std::tuple<bool, double, std::vector<int64_t>>{false, 1e-9, {1, 2, 3, 4, 5, 6}}}) {
    auto c = tiny_config();
    c.train.save_at_eval = at_eval;
    c.train.save_every_seconds = seconds;
    if (seconds < 1) c.train.save_every = 0;
    Trainer u(c);
    std::vector<int64_t> got;
    TrainCallbacks cs;
    cs.on_save = [&](int64_t s) { got.push_back(s); };
    u.run(cs);
    CHECK(got == expect);
  }
  // The two fields are read, written and range-checked like the others.
  auto j = tiny_config().train.to_json();
  CHECK(j["save_at_eval"] == true);
  CHECK(j["save_every_seconds"] == 600.0);
  j["save_every_seconds"] = -1;
  CHECK_THROWS_WITH_AS(TrainConfig::from_json(j), doctest::Contains("train.save_every_seconds"), ConfigError);
  j["save_every_seconds"] = 5;
  j["save_at_eval"] = "yes";
  CHECK_THROWS_WITH_AS(TrainConfig::from_json(j), doctest::Contains("train.save_at_eval' must be true or false"), ConfigError);

  // Stop flag set from a callback (as a UI thread or SIGINT handler would).
  auto cfg = tiny_config();
  cfg.train.steps = 100;
  Trainer s(cfg);
  std::atomic<bool> stop{false};
  TrainCallbacks cb2;
  cb2.on_step = [&](const StepMetrics& m) {
    if (m.step == 2) stop = true;
  };
  auto o2 = s.run(cb2, &stop);
  CHECK(o2.stopped);
  CHECK(o2.steps_done == 2);

  // A NaN weight makes the loss NaN: the run stops naming the step, weights are not updated.
  Trainer n(tiny_config());
  n.train_step();
  {
    torch::NoGradGuard g;
    auto dec = n.model();
    for (auto& p : dec->named_parameters()) {
      if (p.key() == "head.bias") p.value().fill_(std::nan(""));
    }
  }
  auto o3 = n.run();
  CHECK(o3.non_finite);
  CHECK(o3.steps_done == 0);
  CHECK(o3.message.find("loss is NaN at step 2") != std::string::npos);
  CHECK(n.step() == 1);
}

TEST_CASE("trainer: evaluation with memory zeroed differs from evaluation with memory") {
  Trainer t(tiny_config());
  auto e = t.evaluate(Split::kValid);
  CHECK(e.examples == 8);
  CHECK(e.chars == 8 * 6);
  EvalOptions all;
  all.batches = -1;
  CHECK(t.evaluate(Split::kTest, all).examples == 16);
}

TEST_CASE("cli: a session another process is writing is refused - its files untouched, the lock gone with it") {
  const std::string dir = test::temp_dir("trainlock");
  const std::string cfg = write_tiny_config(dir);
  const std::string out = dir + "/run";
  auto r = test::run_cli("train --config " + cfg + " --out " + out + " --steps 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  // A stand-in for a writer still running: its in-flight temp file, and the lock it holds.
  test::write_file(out + "/checkpoints/.step-000000003.safetensors.tmp-42", "half-written");
  {
    io::SessionWriteLock running(out);
    CHECK_THROWS_AS(io::SessionWriteLock{out}, io::SessionError);  // a second lock, even in this process
    auto res = test::run_cli("train --out " + out + " --resume --steps 4");
    INFO(res.output);
    CHECK(res.code == 2);
    CHECK(res.output.find("another process is writing this session") != std::string::npos);
    CHECK(res.output.find("wait for it to end, or stop it, then run this again") != std::string::npos);
    CHECK(test::path_exists(out + "/checkpoints/.step-000000003.safetensors.tmp-42"));  // not removed as stale
    CHECK_FALSE(test::path_exists(out + "/checkpoints/step-000000004.safetensors"));
  }
  // The writer gone (its lock with it): the advice works as printed.
  auto res = test::run_cli("train --out " + out + " --resume --steps 4");
  INFO(res.output);
  CHECK(res.code == 0);
  CHECK(test::path_exists(out + "/checkpoints/step-000000004.safetensors"));
  CHECK_FALSE(test::path_exists(out + "/checkpoints/.step-000000003.safetensors.tmp-42"));
  // A run holds the lock only while it runs: the next one takes it.
  CHECK_NOTHROW(io::SessionWriteLock{out});
  CHECK_THROWS_AS(io::SessionWriteLock{dir + "/no-such-session"}, IoError);
}

TEST_CASE("cli: train --resume goes on from the newest checkpoint that loads - never from an older one over a newer one "
          "it could not read") {
  const std::string dir = test::temp_dir("resume-newest");
  const std::string cfg = write_tiny_config(dir);
  const std::string out = dir + "/run";
  auto r = test::run_cli("train --config " + cfg + " --out " + out +
                         " --steps 6 --set train.save_every=2 --set train.eval_every=0");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const std::string ck = out + "/checkpoints/";
  auto name = [&](int step) {
    char b[64];
    std::snprintf(b, sizeof b, "step-%09d.safetensors", step);
    return ck + b;
  };
  REQUIRE(test::path_exists(name(2)));
  REQUIRE(test::path_exists(name(6)));
  // latest names step 2 while 4 and 6 exist: the run goes on from 6 and says so; 6 is not rewritten.
  test::write_file(ck + "latest", "step-000000002.safetensors\n");
  const std::string six = test::read_file(name(6));
  auto res = test::run_cli("train --out " + out + " --resume --steps 8 --set train.save_every=2");
  INFO(res.output);
  REQUIRE(res.code == 0);
  CHECK(res.output.find("resuming " + out + " from step 6") != std::string::npos);
  CHECK(res.output.find("latest names step 2, but the checkpoint of step 6 is newer and loads: resuming from step 6") !=
        std::string::npos);
  CHECK(test::read_file(name(6)) == six);
  REQUIRE(test::path_exists(name(8)));
  // The newest (8) cannot be read - here a directory where the file was: refused, nothing written;
  // the advice (move it out) then works and resumes from 6.
  REQUIRE(std::rename(name(8).c_str(), (dir + "/eight.safetensors").c_str()) == 0);
  REQUIRE(::mkdir(name(8).c_str(), 0755) == 0);
  const std::string log_before = test::read_file(out + "/metrics.log");
  res = test::run_cli("train --out " + out + " --resume --steps 10 --set train.save_every=2");
  INFO(res.output);
  CHECK(res.code == 2);
  CHECK(res.output.find(name(8) + ": cannot be read: it is a directory, not a file") != std::string::npos);
  CHECK(res.output.find("newer than step 6, the newest checkpoint that loads") != std::string::npos);
  CHECK(res.output.find("move it out of") != std::string::npos);
  CHECK(test::read_file(out + "/metrics.log") == log_before);
  CHECK(test::read_file(name(6)) == six);
  CHECK_FALSE(test::path_exists(name(10)));
  // Unreadable by permission, as the user who runs train (root reads anything: the run is then
  // made as another user, which is what the probe did).
  REQUIRE(::rmdir(name(8).c_str()) == 0);
  REQUIRE(std::rename((dir + "/eight.safetensors").c_str(), name(8).c_str()) == 0);
  REQUIRE(::chmod(name(8).c_str(), 0) == 0);
  std::string as_user;
  if (::geteuid() == 0) {
    if (test::run_shell("command -v setpriv").code == 0) {
      REQUIRE(test::run_shell("chmod 755 " + dir + " && chown -R 65534:65534 " + dir).code == 0);
      as_user = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
    } else {
      MESSAGE("no setpriv: the permission case is not run as root");
    }
  }
  if (::geteuid() != 0 || !as_user.empty()) {
    res = test::run_shell("cd " + dir + " && HOME=" + dir + " " + as_user + MNEMO_BINARY + " train --out " + out +
                          " --resume --steps 10 --set train.save_every=2");
    INFO(res.output);
    CHECK(res.code == 2);
    CHECK(res.output.find(name(8) + ": cannot be read: Permission denied") != std::string::npos);
    CHECK_FALSE(test::path_exists(name(10)));
    // The advice: make it readable and run again - it goes on from 8.
    REQUIRE(::chmod(name(8).c_str(), 0600) == 0);
    res = test::run_shell("cd " + dir + " && HOME=" + dir + " " + as_user + MNEMO_BINARY + " train --out " + out +
                          " --resume --steps 10 --set train.save_every=2");
    INFO(res.output);
    CHECK(res.code == 0);
    CHECK(res.output.find("resuming " + out + " from step 8") != std::string::npos);
    CHECK(test::path_exists(name(10)));
  }
}

TEST_CASE("cli: a hang-up (SIGHUP: the terminal closed) stops train after the current step and saves it, like SIGTERM") {
  const std::string dir = test::temp_dir("train-hup");
  const std::string cfg = write_tiny_config(dir);
  const std::string out = dir + "/run";
  std::vector<std::string> args = {MNEMO_BINARY, "train", "--config", cfg, "--out", out, "--steps", "100000",
                                   "--set", "train.save_every=0", "--set", "train.eval_every=0", "--set",
                                   "train.record_every=0"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = dir + "/train.log";
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGHUP, SIG_DFL);  // as a terminal's shell starts it
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fd);
  REQUIRE(pid > 0);
  // Wait for a few steps in metrics.log (step records are framed JSON with "type":"step").
  const auto t0 = std::chrono::steady_clock::now();
  auto steps_logged = [&] {
    size_t n = 0;
    const std::string text = test::read_file(out + "/metrics.log");
    for (size_t at = text.find("\"type\":\"step\""); at != std::string::npos; at = text.find("\"type\":\"step\"", at + 1)) ++n;
    return n;
  };
  while (steps_logged() < 5 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(steps_logged() >= 5);
  ::kill(pid, SIGHUP);
  int st = 0;
  const auto t1 = std::chrono::steady_clock::now();
  while (::waitpid(pid, &st, WNOHANG) == 0 && std::chrono::steady_clock::now() - t1 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (std::chrono::steady_clock::now() - t1 >= std::chrono::seconds(60)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
  }
  const std::string printed = test::read_file(log);
  INFO(printed);
  REQUIRE(WIFEXITED(st));  // not killed by the hang-up (exit 129 before)
  CHECK(WEXITSTATUS(st) == 130);
  CHECK(printed.find("interrupted at step") != std::string::npos);
  auto latest = io::Session::open(out, 3, io::SessionAccess::kReadOnly).load_latest();
  REQUIRE(latest);
  CHECK(latest->step >= 5);
  CHECK(printed.find("continue with: mnemoscope train --out " + out + " --resume") != std::string::npos);
}

TEST_CASE("cli: a checkpoint that cannot be written (a full disk) stops train with an error record, the checkpoint "
          "kept and a resume command that works") {
  const std::string dir = test::temp_dir("train-nospace");
  const std::string cfg = write_tiny_config(dir);
  const std::string out = dir + "/run";
  auto r = test::run_cli("train --config " + cfg + " --out " + out +
                         " --steps 2 --set train.save_every=2 --set train.eval_every=0 "
                         "--set train.record_every=0");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto ck_bytes = test::read_file(out + "/checkpoints/step-000000002.safetensors").size();
  const size_t limit_kib = (ck_bytes - 1) / 1024;
  REQUIRE(limit_kib * 1024 > test::read_file(out + "/metrics.log").size() + 4096);
  // A file-size limit stands in for a full disk: the checkpoint of step 4 cannot be written.
  auto full = test::run_shell("bash -c \"trap '' XFSZ; ulimit -f " + std::to_string(limit_kib) + "; exec " +
                              std::string(MNEMO_BINARY) + " train --out " + out + " --resume --steps 4\"");
  INFO(full.output);
  CHECK(full.code == 2);
  CHECK(full.output.find("mnemoscope: error: cannot save the checkpoint of step 4: ") != std::string::npos);
  CHECK(full.output.find("File too large") != std::string::npos);
  CHECK(full.output.find("the last checkpoint (step 2) is kept") != std::string::npos);
  const std::string advice = "continue with `mnemoscope train --out " + out + " --resume --steps 4`";
  CHECK(full.output.find(advice) != std::string::npos);
  auto s = io::Session::open(out, 3, io::SessionAccess::kReadOnly);
  const auto logged = parse_run_log(s.read_metrics());
  REQUIRE_FALSE(logged.errors.empty());
  CHECK(logged.errors.back()["message"].get<std::string>().rfind("cannot save the checkpoint of step 4: ", 0) == 0);
  CHECK(s.load_latest()->step == 2);
  // The advice, with room again: it goes on from step 2 to step 4.
  auto again = test::run_cli("train --out " + out + " --resume --steps 4");
  INFO(again.output);
  CHECK(again.code == 0);
  CHECK(again.output.find("resuming " + out + " from step 2") != std::string::npos);
  CHECK(test::path_exists(out + "/checkpoints/step-000000004.safetensors"));
}

TEST_CASE("cli: train, resume and eval a tiny session - bad configs exit 2") {
  const std::string dir = test::temp_dir("traincli");
  const std::string cfg = write_tiny_config(dir);
  const std::string out = dir + "/run";
  // train, --resume and the first eval start the program; the other evals, export-weights and
  // the refusals run in this process (test::run_cli_here: messages, exit codes and files).
  auto r = test::run_cli("train --config " + cfg + " --out " + out + " --steps 4");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("step 4/4") != std::string::npos);
  CHECK(r.output.find("final test @ step 4") != std::string::npos);
  // train.eval_batches 2 of batch 4 score the first 8 of the 16 test examples: the line says so.
  CHECK(r.output.find("(8 of 16 examples: the split's first)") != std::string::npos);
  CHECK(test::read_file(out + "/metrics.log").find("\"split_examples\":16") != std::string::npos);
  CHECK(test::path_exists(out + "/manifest.json"));
  CHECK(test::path_exists(out + "/metrics.log"));
  CHECK(test::path_exists(out + "/checkpoints/step-000000004.safetensors"));

  auto again = test::run_cli("train --config " + cfg + " --out " + out + " --steps 4");
  CHECK(again.code == 2);
  CHECK(again.output.find("--resume") != std::string::npos);

  auto res = test::run_cli("train --out " + out + " --resume --steps 6");
  INFO(res.output);
  CHECK(res.code == 0);
  CHECK(res.output.find("resuming " + out + " from step 4") != std::string::npos);
  CHECK(test::path_exists(out + "/checkpoints/step-000000006.safetensors"));

  auto ev =
      test::run_cli("eval --config " + cfg + " --checkpoint " + out + "/checkpoints/step-000000006.safetensors --json");
  INFO(ev.output);
  CHECK(ev.code == 0);
  auto j = nlohmann::json::parse(ev.output.substr(ev.output.find('{')));
  CHECK(j["step"] == 6);
  CHECK(j["split"] == "test");
  CHECK(j["segments"] == 2);
  CHECK(j["accuracy"].get<double>() >= 0.0);
  // --set overrides a field by its dotted path; a typo is named.
  auto ev3 = test::run_cli_here("eval --config " + cfg + " --checkpoint " + out +
                           "/checkpoints/step-000000006.safetensors --json --set task.segments=3 --set train.batch=2");
  INFO(ev3.output);
  CHECK(ev3.code == 0);
  CHECK(nlohmann::json::parse(ev3.output.substr(ev3.output.find('{')))["segments"] == 3);
  // --by-position: with the memory, reset and zeroed, by segment and by position; the
  // overall bits are those of the plain evaluation.
  auto bp = test::run_cli_here("eval --checkpoint " + out + " --by-position --from-position 2 --json");
  INFO(bp.output);
  REQUIRE(bp.code == 0);
  auto pj = nlohmann::json::parse(bp.output.substr(bp.output.find('{')));
  CHECK(pj["has_memory"] == true);
  CHECK(pj["by_segment"].size() == 2);
  CHECK(pj["by_position"].size() == static_cast<size_t>(pj["segment_len"].get<int64_t>()));
  CHECK(pj["bits_per_token"].get<double>() == doctest::Approx(j["bits_per_token"].get<double>()).epsilon(1e-4));
  auto ez = test::run_cli_here("eval --checkpoint " + out + " --zero-memory --json");
  REQUIRE(ez.code == 0);
  CHECK(pj["bits_per_token_zero_memory"].get<double>() ==
        doctest::Approx(nlohmann::json::parse(ez.output.substr(ez.output.find('{')))["bits_per_token"].get<double>())
            .epsilon(1e-4));
  CHECK(pj["memory_gain"].get<double>() ==
        doctest::Approx(pj["bits_per_token_zero_memory"].get<double>() - pj["bits_per_token"].get<double>()));
  CHECK(pj["by_segment"][0]["bits"] == pj["by_segment"][0]["bits_reset_memory"]);  // segment 0: the same memory
  auto text = test::run_cli_here("eval --checkpoint " + out + " --by-position --from-position 2");
  CHECK(text.code == 0);
  CHECK(text.output.find("positions 2..") != std::string::npos);
  auto both = test::run_cli_here("eval --checkpoint " + out + " --by-position --zero-memory");
  CHECK(both.code == 2);
  CHECK(both.output.find("leave out --zero-memory") != std::string::npos);
  auto far = test::run_cli_here("eval --checkpoint " + out + " --by-position --from-position 999");
  CHECK(far.code == 2);
  CHECK(far.output.find("must be below the segment length") != std::string::npos);
  // --doc: one document, the memory carried, reset and zeroed.
  {
    std::ofstream(dir + "/doc.txt") << "It was the best of times, it was the worst of times, it was the age of wisdom.";
    std::ofstream(dir + "/empty.txt");
  }
  auto dj = test::run_cli_here("eval --checkpoint " + out + " --doc " + dir + "/doc.txt --json");
  INFO(dj.output);
  REQUIRE(dj.code == 0);
  auto dd = nlohmann::json::parse(dj.output.substr(dj.output.find('{')));
  CHECK(dd["bytes"] == 78);
  CHECK(dd["predicted"] == 77);  // every byte but the first
  CHECK(std::isfinite(dd["bits_per_byte"].get<double>()));
  CHECK(dd["memory_gain"].get<double>() ==
        doctest::Approx(dd["bits_per_byte_zero_memory"].get<double>() - dd["bits_per_byte"].get<double>()));
  CHECK(dd["memory_gain_reset"].get<double>() ==
        doctest::Approx(dd["bits_per_byte_reset_memory"].get<double>() - dd["bits_per_byte"].get<double>()));
  // --csv: each token's losses; they add up to the JSON's figures, over all positions and
  // over positions 2.. of each segment.
  auto dc = test::run_cli_here("eval --checkpoint " + out + " --doc " + dir + "/doc.txt --from-position 2 --json --csv " +
                          dir + "/tokens.csv");
  INFO(dc.output);
  REQUIRE(dc.code == 0);
  auto dcj = nlohmann::json::parse(dc.output.substr(dc.output.find('{')));
  CHECK(dcj["bits_per_byte"].get<double>() == dd["bits_per_byte"].get<double>());
  {
    std::ifstream in(dir + "/tokens.csv");
    std::string line;
    std::getline(in, line);
    CHECK(line == "token,segment,position,byte,nats_memory,nats_reset,nats_zeroed,bits_saved_reset,bits_saved_zeroed");
    const int64_t seg_len = dcj["segment_len"].get<int64_t>();
    const std::string doc_text = "It was the best of times, it was the worst of times, it was the age of wisdom.";
    double all = 0, all_reset = 0, far = 0, far_reset = 0;
    int64_t rows = 0, n = 0, nfar = 0;
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
      REQUIRE(f.size() == 9);
      CHECK(std::stoll(f[0]) == rows);
      CHECK(std::stoll(f[1]) == rows / seg_len);
      CHECK(std::stoll(f[2]) == rows % seg_len);
      CHECK(std::stoll(f[3]) == static_cast<unsigned char>(doc_text[static_cast<size_t>(rows)]));
      const double w = std::stod(f[4]), r = std::stod(f[5]), z = std::stod(f[6]);
      if (!std::isnan(w)) {
        CHECK(std::stod(f[7]) == doctest::Approx((r - w) / std::log(2.0)).epsilon(1e-4));
        CHECK(std::stod(f[8]) == doctest::Approx((z - w) / std::log(2.0)).epsilon(1e-4));
        all += w;
        all_reset += r;
        ++n;
        if (rows % seg_len >= 2) {
          far += w;
          far_reset += r;
          ++nfar;
        }
      }
      ++rows;
    }
    CHECK(rows == 78);
    CHECK(n == 77);
    REQUIRE(nfar > 0);
    CHECK(all / n / std::log(2.0) == doctest::Approx(dcj["bits_per_byte"].get<double>()).epsilon(1e-5));
    CHECK(far / nfar / std::log(2.0) == doctest::Approx(dcj["bits_per_byte_from_position"].get<double>()).epsilon(1e-5));
    CHECK(far_reset / nfar / std::log(2.0) ==
          doctest::Approx(dcj["bits_per_byte_from_position_reset_memory"].get<double>()).epsilon(1e-5));
    CHECK((all_reset - all) / n / std::log(2.0) == doctest::Approx(dcj["memory_gain_reset"].get<double>()).epsilon(1e-4));
  }
  auto nocsv = test::run_cli_here("eval --checkpoint " + out + " --csv " + dir + "/t2.csv");
  CHECK(nocsv.code == 2);
  CHECK(nocsv.output.find("--csv writes the per-token losses of --doc FILE") != std::string::npos);
  CHECK_FALSE(test::path_exists(dir + "/t2.csv"));
  auto dt = test::run_cli_here("eval --checkpoint " + out + " --doc " + dir + "/doc.txt");
  CHECK(dt.code == 0);
  CHECK(dt.output.find("bits/byte with the memory carried across the document") != std::string::npos);
  auto de = test::run_cli_here("eval --checkpoint " + out + " --doc " + dir + "/empty.txt");
  CHECK(de.code == 2);
  CHECK(de.output.find("empty") != std::string::npos);
  // --doc alone: the zoo's text model, said; no --checkpoint and no --doc: the flag is required.
  auto dz = test::run_cli_here("eval --doc " + dir + "/doc.txt");
  INFO(dz.output);
  CHECK(dz.code == 0);
  CHECK(dz.output.find("model: the zoo's text model memformer-general") != std::string::npos);
  CHECK(dz.output.find("(memformer, 46 bytes predicted)") != std::string::npos);
  // A weights file with only its model config (export-weights, the Python package's
  // save_weights) scores a document alone, as with the config given; a split needs the config.
  auto ew = test::run_cli_here("export-weights --config " + cfg + " --seed 3 --out " + dir + "/w.safetensors");
  REQUIRE(ew.code == 0);
  auto wa = test::run_cli_here("eval --checkpoint " + dir + "/w.safetensors --doc " + dir + "/doc.txt --json");
  auto wc = test::run_cli_here("eval --config " + cfg + " --checkpoint " + dir + "/w.safetensors --doc " + dir +
                          "/doc.txt --json");
  INFO(wa.output);
  REQUIRE(wa.code == 0);
  REQUIRE(wc.code == 0);
  auto ja = nlohmann::json::parse(wa.output.substr(wa.output.find('{')));
  auto jc = nlohmann::json::parse(wc.output.substr(wc.output.find('{')));
  CHECK(ja["predicted"] == 77);
  CHECK(ja["bits_per_byte"].get<double>() == jc["bits_per_byte"].get<double>());
  CHECK(ja["bits_per_byte_zero_memory"].get<double>() == jc["bits_per_byte_zero_memory"].get<double>());
  auto wsplit = test::run_cli_here("eval --checkpoint " + dir + "/w.safetensors --split test");
  CHECK(wsplit.code == 2);
  CHECK(wsplit.output.find("with only its model config); pass --config with the config it was trained with, or "
                           "score a document with --doc FILE") != std::string::npos);
  auto dn = test::run_cli_here("eval --split test");
  CHECK(dn.code == 2);
  CHECK(dn.output.find("--checkpoint is required") != std::string::npos);
  auto ds = test::run_cli_here("eval --checkpoint " + out + " --doc " + dir + "/doc.txt --split valid");
  CHECK(ds.code == 2);
  CHECK(ds.output.find("leave out --split") != std::string::npos);
  auto typo = test::run_cli_here("train --config " + cfg + " --out " + dir + "/run3 --set task.segmnts=3");
  CHECK(typo.code == 2);
  CHECK(typo.output.find("task.segmnts") != std::string::npos);

  {
    auto bad = tiny_config().to_json();
    bad["train"]["lr"] = -1;
    std::ofstream(dir + "/bad.json") << bad.dump();
  }
  auto b = test::run_cli_here("train --config " + dir + "/bad.json --out " + dir + "/run2");
  CHECK(b.code == 2);
  CHECK(b.output.find("train.lr") != std::string::npos);
  CHECK_FALSE(test::path_exists(dir + "/run2"));
  auto m = test::run_cli_here("eval --config " + cfg + " --checkpoint " + dir + "/missing.safetensors");
  CHECK(m.code == 2);
  CHECK(m.output.find("--checkpoint") != std::string::npos);
}

TEST_CASE("trainer: a registered task kind trains like a built-in one") {
  register_task_kind("copy-twin", [](const nlohmann::json& j) -> std::shared_ptr<TaskSource> {
    auto k = j;
    k["name"] = "copy";
    return std::make_shared<Task>(TaskConfig::from_json(k));
  });
  auto j = tiny_config().to_json();
  j["task"]["name"] = "copy-twin";
  Trainer t(TrainingConfig::from_json(j));
  CHECK(t.task().segments() == 2);
  CHECK_FALSE(t.train_step().non_finite);
  j["task"]["name"] = "copy-triplet";
  CHECK_THROWS_WITH_AS(TrainingConfig::from_json(j), doctest::Contains("copy-twin"), ConfigError);
}

TEST_CASE("shipped task sessions load and build their models") {
  for (const char* task : {"copy", "reverse", "assoc", "quadratic"}) {
    for (const char* model : {"transformer", "trxl", "rmt", "rmt-write-only", "trxl-rmt"}) {
      const std::string path = std::string(MNEMO_SOURCE_DIR) + "/sessions/" + task + "-" + model + ".json";
      CAPTURE(path);
      auto cfg = TrainingConfig::load(path);
      CHECK(cfg.model.model == model);
      CHECK(cfg.make_task()->name() == task);
      CHECK(make_model(cfg.model, 0));
    }
  }
}

TEST_CASE("cli: train --data without a config fine-tunes the zoo's text model and says what its memory saves") {
  const std::string model = std::string(MNEMO_SOURCE_DIR) + "/assets/models/memformer-general.safetensors";
  if (!test::path_exists(model)) MNEMO_SKIP("the zoo's text model is not in assets/models");
  const std::string dir = test::temp_dir("train-data-default");
  // A user's folder: three text files with line breaks (a held-out chapter, cut in three).
  const std::string text = test::read_file(std::string(MNEMO_SOURCE_DIR) + "/assets/texts/moby-dick-chapter-10.txt");
  io::make_dirs(dir + "/texts");
  for (int i = 0; i < 3; ++i)
    test::write_file(dir + "/texts/part" + std::to_string(i) + ".txt",
                     text.substr(static_cast<size_t>(i) * 2900, 2900));
  auto r = test::run_cli("--threads 1 train --data " + dir + "/texts --out " + dir +
                         "/run --steps 2 --set train.eval_every=2 "
                         "--set train.eval_batches=1");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("train --data: fine-tuning the zoo's text model memformer-general") != std::string::npos);
  CHECK(r.output.find("sessions/text-finetune.json") != std::string::npos);
  const auto at = r.output.find("memory: on ");
  REQUIRE(at != std::string::npos);
  CHECK(r.output.find("against a reset to its initial state", at) != std::string::npos);
  // The saving is printed with its sign; a warning follows exactly when it is not above zero.
  const auto saves = r.output.find("the memory saves ", at);
  REQUIRE(saves != std::string::npos);
  const double gain = std::stod(r.output.substr(saves + 17));
  CHECK((r.output.find("warning: the memory saves nothing") != std::string::npos) == (gain <= 0));
  // The session started from the zoo model, with the curriculum on.
  const std::string manifest = test::read_file(dir + "/run/manifest.json");
  CHECK(manifest.find("memformer-general.safetensors") != std::string::npos);
  const nlohmann::json m = nlohmann::json::parse(manifest);
  CHECK(m.dump().find("\"names\":0.5") != std::string::npos);
  // --random: from scratch; without --data it is refused.
  auto bad = test::run_cli("train --random --out " + dir + "/x");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("--random goes with --data PATH") != std::string::npos);
}
