// Data-parallel training on c10d (core/dist/process_group.h, Trainer::set_process_group):
// launch variables, collectives, rendezvous errors, a lost rank named, and 2 ranks on
// 127.0.0.1 training to the same parameters as one process on the global batch. Ranks run
// as threads of this process (each with its own store client and Gloo group), loopback only.
#include "core/dist/process_group.h"
#include "core/train/trainer.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

using namespace mnemo;
using dist::DistOptions;
using dist::ProcessGroup;

namespace {

DistOptions loopback(int rank, int world, int port, int timeout_ms = 20000) {
  DistOptions o;
  o.rank = rank;
  o.world_size = world;
  o.local_rank = rank;
  o.master_addr = "127.0.0.1";
  o.master_port = port;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  return o;
}

// Runs body(rank) on `world` threads; rethrows the first failure after all joined.
void ranks(int world, const std::function<void(int)>& body) {
  std::vector<std::thread> ts;
  std::vector<std::exception_ptr> errs(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r)
    ts.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errs[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : ts) t.join();
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
}

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

nlohmann::json session_json(const std::string& name) {
  std::ifstream in(std::string(MNEMO_SOURCE_DIR) + "/sessions/" + name);
  return nlohmann::json::parse(in);
}

// Tiny versions of shipped configs: the RMT of the copy learning test and the zoo's
// Memformer on copy-recall, shrunk to seconds.
TrainingConfig tiny_rmt() {
  auto j = session_json("copy-rmt-tiny.json");
  j["model"]["dim"] = 16;
  j["model"]["heads"] = 2;
  j["model"]["ff"] = 32;
  j["task"]["train_size"] = 256;
  j["train"]["batch"] = 6;
  j["train"]["eval_every"] = 0;
  return TrainingConfig::from_json(j);
}
TrainingConfig tiny_memformer() {
  auto j = session_json("zoo-memformer-copy.json");
  j["model"]["dim"] = 16;
  j["model"]["heads"] = 2;
  j["model"]["layers"] = 1;
  j["model"]["dec_layers"] = 1;
  j["model"]["ff"] = 32;
  j["task"]["train_size"] = 256;
  j["train"].erase("curriculum");
  j["train"]["batch"] = 6;
  j["train"]["eval_every"] = 0;
  j["train"]["lr"] = 3e-3;
  j["train"]["warmup"] = 2;
  return TrainingConfig::from_json(j);
}

struct RunResult {
  std::vector<double> losses, accuracies, grad_norms;
  std::vector<torch::Tensor> params;
  std::vector<std::vector<torch::Tensor>> grads;  // per step: the gradient AdamW stepped with
  EvalMetrics valid;
};

RunResult collect(Trainer& t, int steps) {
  RunResult r;
  for (int s = 0; s < steps; ++s) {
    StepMetrics m = t.train_step();
    REQUIRE_FALSE(m.non_finite);
    r.losses.push_back(m.loss);
    r.accuracies.push_back(m.accuracy);
    r.grad_norms.push_back(m.grad_norm);
    std::vector<torch::Tensor> g;
    for (auto& p : t.model()->parameters())
      g.push_back(p.grad().defined() ? p.grad().detach().clone() : torch::zeros_like(p));
    r.grads.push_back(std::move(g));
  }
  for (auto& p : t.model()->parameters()) r.params.push_back(p.detach().clone());
  EvalOptions eo;
  eo.batches = 3;  // 3 batches over 2 ranks: shares of 2 and 1
  r.valid = t.evaluate(Split::kValid, eo);
  return r;
}

double max_param_diff(const RunResult& a, const RunResult& b) {
  double d = 0;
  for (size_t i = 0; i < a.params.size(); ++i) d = std::max(d, test::max_abs_diff(a.params[i], b.params[i]));
  return d;
}

// The train-split indices each thread's task was asked for, in order (per thread).
std::mutex g_log_mu;
std::map<std::thread::id, std::vector<std::vector<int64_t>>> g_log;

class LoggedTask : public TaskSource {
 public:
  explicit LoggedTask(std::shared_ptr<TaskSource> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "logged-copy"; }
  nlohmann::json to_json() const override {
    auto j = inner_->to_json();
    j["name"] = "logged-copy";
    return j;
  }
  int64_t length() const override { return inner_->length(); }
  int64_t segments() const override { return inner_->segments(); }
  int64_t segment_len() const override { return inner_->segment_len(); }
  int64_t split_size(Split s) const override { return inner_->split_size(s); }
  TaskBatch batch(Split s, const std::vector<int64_t>& idx, torch::Device d) const override {
    if (s == Split::kTrain) {
      std::lock_guard<std::mutex> lk(g_log_mu);
      g_log[std::this_thread::get_id()].push_back(idx);
    }
    return inner_->batch(s, idx, d);
  }

 private:
  std::shared_ptr<TaskSource> inner_;
};

}  // namespace

TEST_CASE("dist: launch variables and --master are checked, naming the variable") {
  {
    test::EnvGuard w("WORLD_SIZE", "2"), r("RANK", "1"), a("MASTER_ADDR", "10.1.2.3"), p("MASTER_PORT", "29501");
    test::EnvGuard l("LOCAL_RANK", "0");
    auto o = DistOptions::from_env();
    REQUIRE(o);
    CHECK(o->rank == 1);
    CHECK(o->world_size == 2);
    CHECK(o->local_rank == 0);
    CHECK(o->master_addr == "10.1.2.3");
    CHECK(o->master_port == 29501);
    o->validate();
  }
  {
    test::EnvGuard w("WORLD_SIZE", "2"), r("RANK", "2");
    CHECK_THROWS_WITH_AS(DistOptions::from_env(), doctest::Contains("RANK='2'"), InputError);
  }
  {
    test::EnvGuard w("WORLD_SIZE", "two");
    CHECK_THROWS_WITH_AS(DistOptions::from_env(), doctest::Contains("WORLD_SIZE='two'"), InputError);
  }
  {
    test::EnvGuard w("WORLD_SIZE", "2"), r("RANK", "0"), p("MASTER_PORT", "70000");
    CHECK_THROWS_WITH_AS(DistOptions::from_env(), doctest::Contains("MASTER_PORT='70000'"), InputError);
  }
  {
    test::EnvGuard w("WORLD_SIZE", "3");
    ::unsetenv("RANK");
    CHECK_THROWS_WITH_AS(DistOptions::from_env(), doctest::Contains("RANK is not"), InputError);
  }
  std::string addr;
  int port = 0;
  dist::parse_master("example.org:1234", "--master", &addr, &port);
  CHECK(addr == "example.org");
  CHECK(port == 1234);
  dist::parse_master("[::1]:29500", "--master", &addr, &port);
  CHECK(addr == "::1");
  CHECK_THROWS_WITH_AS(dist::parse_master("host", "--master", &addr, &port), doctest::Contains("ADDR:PORT"), InputError);
  CHECK_THROWS_WITH_AS(dist::parse_master("host:0", "--master", &addr, &port), doctest::Contains("1..65535"), InputError);
  DistOptions bad = loopback(0, 2, 29500);
  bad.rank = 2;
  bad.rank_from = "--rank";
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("--rank = 2 is out of range 0..1"), InputError);
}

TEST_CASE("dist: allreduce sums every dtype in place, broadcast copies rank 0's, across buckets") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  const int port = dist::free_tcp_port();
  std::vector<std::vector<torch::Tensor>> got(2);
  std::vector<std::string> bytes(2);
  ranks(2, [&](int r) {
    auto pg = ProcessGroup::connect(loopback(r, 2, port));
    CHECK(pg->rank() == r);
    CHECK(pg->world_size() == 2);
    // Two 20 MiB tensors do not fit one 25 MiB bucket: two allreduces of float, one of double.
    std::vector<torch::Tensor> ts = {torch::full({5 << 20}, 1.0f + static_cast<float>(r)),
                                     torch::full({2, 3}, 10.0 * (r + 1), torch::kFloat64),
                                     torch::full({5 << 20}, 2.0f * static_cast<float>(r))};
    pg->allreduce_sum(ts, "test allreduce");
    std::vector<torch::Tensor> b = {torch::arange(7, torch::kFloat32) * static_cast<float>(r + 1)};
    pg->broadcast(b, 0, "test broadcast");
    bytes[static_cast<size_t>(r)] = pg->broadcast_bytes(r == 0 ? std::string("rank zero's \0bytes", 18) : "", "bytes");
    ts.push_back(b[0]);
    got[static_cast<size_t>(r)] = ts;
    pg->barrier("test barrier");
  });
  for (int r = 0; r < 2; ++r) {
    const auto& ts = got[static_cast<size_t>(r)];
    CHECK(ts[0].min().item<float>() == 3.0f);
    CHECK(ts[0].max().item<float>() == 3.0f);
    CHECK(ts[1].min().item<double>() == 30.0);
    CHECK(ts[2].min().item<float>() == 2.0f);
    CHECK(ts[2].max().item<float>() == 2.0f);
    CHECK(test::max_abs_diff(ts[3], torch::arange(7, torch::kFloat32)) == 0.0);
    CHECK(bytes[static_cast<size_t>(r)] == std::string("rank zero's \0bytes", 18));
  }
}

TEST_CASE("dist: rendezvous problems are RendezvousErrors naming the port, the master or the missing rank") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  // A port in use.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int taken = ntohs(a.sin_port);
  const std::string in_use = what_of([&] { ProcessGroup::connect(loopback(0, 2, taken, 2000)); });
  ::close(fd);
  CHECK_MESSAGE(in_use.find("port " + std::to_string(taken) + " (MASTER_PORT) is in use") != std::string::npos, in_use);

  // Rank 1 of 2 never starts: rank 0 gives up after the timeout and names it.
  const int port = dist::free_tcp_port();
  const auto t0 = std::chrono::steady_clock::now();
  const std::string lonely = what_of([&] { ProcessGroup::connect(loopback(0, 2, port, 1500)); });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_MESSAGE(lonely.find("rank 1 never joined the rendezvous at 127.0.0.1:" + std::to_string(port)) !=
                    std::string::npos, lonely);
  CHECK(secs < 10.0);

  // No master: rank 1 cannot reach it within the timeout.
  const int nobody = dist::free_tcp_port();
  const std::string unreachable = what_of([&] { ProcessGroup::connect(loopback(1, 2, nobody, 1500)); });
  CHECK_MESSAGE(unreachable.find("cannot reach the master at 127.0.0.1:" + std::to_string(nobody)) != std::string::npos,
                unreachable);

  // The ranks disagree on the world size.
  const int port2 = dist::free_tcp_port();
  std::vector<std::string> msgs(2);
  ranks(2, [&](int r) {
    msgs[static_cast<size_t>(r)] = what_of([&] { ProcessGroup::connect(loopback(r, r == 0 ? 2 : 3, port2, 3000)); });
  });
  CHECK_MESSAGE(msgs[1].find("rank 0 at 127.0.0.1:" + std::to_string(port2) + " runs a group of 2 ranks") !=
                    std::string::npos, msgs[1]);
}

TEST_CASE("dist: a rank that leaves makes the other's collective fail naming it") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  const int port = dist::free_tcp_port();
  std::string msg;
  int named = -2;
  ranks(2, [&](int r) {
    auto pg = ProcessGroup::connect(loopback(r, 2, port, 8000));
    pg->barrier("first barrier");
    if (r == 1) {
      pg.reset();  // leaves: its connections close and its heartbeat stops
      return;
    }
    pg->set_phase(3, "gradient allreduce");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::vector<torch::Tensor> t = {torch::ones({4})};
    try {
      pg->allreduce_sum(t, "gradient allreduce");
    } catch (const dist::PeerError& e) {
      msg = e.what();
      named = e.rank;
    }
  });
  CHECK(named == 1);
  CHECK_MESSAGE(msg.find("rank 0: rank 1 stopped responding") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("during the gradient allreduce of step 3") != std::string::npos, msg);
}

TEST_CASE("dist: a rank that is alive but never reaches the collective is named with its phase after the timeout") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  const int port = dist::free_tcp_port();
  std::string msg;
  int named = -2;
  double secs = 0;
  ranks(2, [&](int r) {
    // 4 s: room for both ranks to join the rendezvous on a loaded machine.
    auto pg = ProcessGroup::connect(loopback(r, 2, port, 4000));
    pg->barrier("first barrier");
    if (r == 1) {
      pg->set_phase(7, "forward/backward");  // busy (its heartbeat goes on), never joins
      std::this_thread::sleep_for(std::chrono::milliseconds(9000));
      return;
    }
    pg->set_phase(7, "gradient allreduce");
    std::vector<torch::Tensor> t = {torch::ones({4})};
    const auto t0 = std::chrono::steady_clock::now();
    try {
      pg->allreduce_sum(t, "gradient allreduce");
    } catch (const dist::PeerError& e) {
      msg = e.what();
      named = e.rank;
    }
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  CHECK(named == 1);
  CHECK_MESSAGE(msg.find("rank 0: rank 1 did not join it in time (rank 1 is in the forward/backward of step 7; "
                         "--dist-timeout 4 s) during the gradient allreduce of step 7") != std::string::npos, msg);
  CHECK(secs >= 3.9);  // the timeout, then the heartbeat check
  CHECK(secs < 9.0);
}

TEST_CASE("dist: 2 ranks x 5 steps on 127.0.0.1 equal 1 process on the global batch (RMT, Memformer)") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  for (const auto& [name, cfg] : {std::make_pair(std::string("rmt"), tiny_rmt()),
                                  std::make_pair(std::string("memformer"), tiny_memformer())}) {
    CAPTURE(name);
    Trainer one(cfg);
    const RunResult ref = collect(one, 5);
    std::vector<RunResult> got(2);
    const int port = dist::free_tcp_port();
    ranks(2, [&](int r) {
      auto pg = ProcessGroup::connect(loopback(r, 2, port));
      // Rank 1 starts from other weights: the start-up broadcast must replace them.
      TrainingConfig c = cfg;
      if (r == 1) c.train.seed += 17;
      Trainer t(c);
      t.set_process_group(pg.get());
      t.sync_from_rank0();
      got[static_cast<size_t>(r)] = collect(t, 5);
    });
    for (int r = 0; r < 2; ++r) {
      const RunResult& g = got[static_cast<size_t>(r)];
      for (size_t s = 0; s < ref.losses.size(); ++s) {
        CHECK(g.losses[s] == doctest::Approx(ref.losses[s]).epsilon(1e-5));
        CHECK(g.accuracies[s] == doctest::Approx(ref.accuracies[s]).epsilon(1e-6));
      }
      // The shared evaluation sums to the one-process evaluation of the same batches.
      CHECK(g.valid.examples == ref.valid.examples);
      CHECK(g.valid.chars == ref.valid.chars);
      CHECK(g.valid.loss == doctest::Approx(ref.valid.loss).epsilon(1e-5));
      CHECK(g.valid.accuracy == doctest::Approx(ref.valid.accuracy).epsilon(1e-6));
      // Every step's gradient (reduced, then clipped) is the global batch's.
      double gd = 0;
      for (size_t s = 0; s < ref.grads.size(); ++s) {
        CHECK(g.grad_norms[s] == doctest::Approx(ref.grad_norms[s]).epsilon(1e-5));
        for (size_t i = 0; i < ref.grads[s].size(); ++i)
          gd = std::max(gd, test::max_abs_diff(ref.grads[s][i], g.grads[s][i]));
      }
      CHECK_MESSAGE(gd < 1e-6, name << " rank " << r << ": gradients differ from one process by " << gd);
      // Parameters within 1e-5 — except elements whose gradient is float noise in the one-process
      // run (|g| < 1e-6 at some step: e.g. attention key biases, whose gradient is zero in exact
      // arithmetic since softmax ignores a shift of all logits): AdamW's m / sqrt(v) turns noise
      // into steps of up to lr, so there the two runs may differ by up to lr per step.
      double d = 0, d_noise = 0;
      int64_t noise_elems = 0, elems = 0;
      for (size_t i = 0; i < ref.params.size(); ++i) {
        torch::Tensor min_g = ref.grads[0][i].abs();
        for (size_t s = 1; s < ref.grads.size(); ++s) min_g = torch::minimum(min_g, ref.grads[s][i].abs());
        const torch::Tensor noise = min_g < 1e-6;
        const torch::Tensor diff = (ref.params[i] - g.params[i]).abs().to(torch::kFloat64);
        const torch::Tensor clean = diff.masked_fill(noise, 0.0);
        d = std::max(d, clean.max().item<double>());
        d_noise = std::max(d_noise, diff.masked_fill(noise.logical_not(), 0.0).max().item<double>());
        noise_elems += noise.sum().item<int64_t>();
        elems += ref.params[i].numel();
      }
      MESSAGE(name << " rank " << r << ": parameters within " << d << " of one process; " << noise_elems << " of "
                   << elems << " elements with |g| < 1e-6 at some step (zero or float noise: unused embedding rows, key biases) within " << d_noise);
      CHECK_MESSAGE(d < 1e-5, name << " rank " << r << ": parameters differ from one process by " << d);
      CHECK(d_noise <= 5 * cfg.train.lr + 1e-6);
    }
    CHECK(max_param_diff(got[0], got[1]) == 0.0);  // identical updates on every rank
    CHECK(ref.losses.back() < ref.losses.front());
  }
}

TEST_CASE("dist: the global batch is the same data for N = 1, 2, 3 and the shards are disjoint") {
  if (!dist::has_gloo()) {
    MNEMO_SKIP("this build has no Gloo (libgloo-dev missing at build time)");
    return;
  }
  register_task_kind("logged-copy", [](const nlohmann::json& j) -> std::shared_ptr<TaskSource> {
    auto k = j;
    k["name"] = "copy";
    return std::make_shared<LoggedTask>(make_task(k));
  });
  auto j = tiny_rmt().to_json();
  j["task"]["name"] = "logged-copy";
  j["train"]["batch"] = 7;  // not a multiple of 2 or 3: shards of 3+4 and 2+2+3
  const TrainingConfig cfg = TrainingConfig::from_json(j);
  std::map<int, std::vector<std::vector<int64_t>>> seen;  // world -> per step, the sorted union
  for (int world : {1, 2, 3}) {
    {
      std::lock_guard<std::mutex> lk(g_log_mu);
      g_log.clear();
    }
    std::vector<std::thread::id> ids(static_cast<size_t>(world));
    const int port = dist::free_tcp_port();
    ranks(world, [&](int r) {
      ids[static_cast<size_t>(r)] = std::this_thread::get_id();
      std::unique_ptr<ProcessGroup> pg;
      Trainer t(cfg);
      if (world > 1) {
        pg = ProcessGroup::connect(loopback(r, world, port));
        t.set_process_group(pg.get());
        t.sync_from_rank0();
      }
      for (int s = 0; s < 3; ++s) t.train_step();
    });
    std::lock_guard<std::mutex> lk(g_log_mu);
    auto& steps = seen[world];
    steps.assign(3, {});
    for (int r = 0; r < world; ++r) {
      const auto& calls = g_log[ids[static_cast<size_t>(r)]];
      REQUIRE(calls.size() == 3);
      for (int s = 0; s < 3; ++s) {
        CHECK(calls[static_cast<size_t>(s)].size() >= 2);
        for (int64_t i : calls[static_cast<size_t>(s)]) steps[static_cast<size_t>(s)].push_back(i);
      }
    }
    for (auto& v : steps) {
      std::set<int64_t> uniq(v.begin(), v.end());
      CHECK_MESSAGE(uniq.size() == v.size(), "world " << world << ": a shard overlaps another");
      std::sort(v.begin(), v.end());
    }
  }
  for (int s = 0; s < 3; ++s) {
    std::vector<int64_t> expect;
    for (int64_t i = 0; i < 7; ++i) expect.push_back(7 * s + i);
    CHECK(seen[1][static_cast<size_t>(s)] == expect);
    CHECK(seen[2][static_cast<size_t>(s)] == expect);
    CHECK(seen[3][static_cast<size_t>(s)] == expect);
  }
}

TEST_CASE("dist: an NCCL group of one rank on the GPU trains like the plain CUDA path and like the CPU") {
  if (!dist::has_nccl() || !torch::cuda::is_available()) {
    MNEMO_SKIP_WITHOUT_CUDA("no NCCL backend or no CUDA device in this build / on this machine");
    return;
  }
  const TrainingConfig cfg = tiny_memformer();
  const torch::Device gpu(torch::kCUDA, 0);
  Trainer plain(cfg, gpu);
  const RunResult ref = collect(plain, 5);
  DistOptions o = loopback(0, 1, dist::free_tcp_port());
  o.backend = "nccl";
  auto pg = ProcessGroup::connect(o);
  CHECK(pg->backend() == "nccl");
  Trainer t(cfg, gpu);
  t.set_process_group(pg.get());
  t.sync_from_rank0();
  const RunResult got = collect(t, 5);
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    CHECK(got.losses[s] == doctest::Approx(ref.losses[s]).epsilon(1e-5));
    CHECK(got.grad_norms[s] == doctest::Approx(ref.grad_norms[s]).epsilon(1e-4));
  }
  // The group's path scales the gradient by the token count and divides after the
  // allreduce: float rounding, which AdamW turns into at most lr per step where a gradient
  // is float noise (see the 2-rank test above).
  CHECK(max_param_diff(ref, got) <= 5 * cfg.train.lr + 1e-6);
  // And the GPU trains like the CPU (same seed, same batches).
  Trainer cpu(cfg);
  const RunResult c = collect(cpu, 5);
  for (size_t s = 0; s < c.losses.size(); ++s) CHECK(ref.losses[s] == doctest::Approx(c.losses[s]).epsilon(1e-3));
}
