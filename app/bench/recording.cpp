// `mnemoscope bench recording`: training step time with the default session recording (a
// metrics record per step, probe traces every train.record_every steps; core/train/recorder.h)
// against recording off, in one process, alternating blocks of steps so drift hits both.
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/cli/assets.h"

#include "app/cli/cli.h"
#include "core/io/session.h"
#include "core/train/memory_stats.h"
#include "core/train/recorder.h"
#include "core/train/run_log.h"
#include "core/train/trainer.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace mnemo::app {

namespace {

struct BenchRecordingOptions {
  std::string config;        // training config ("" = sessions/copy-rmt.json)
  int64_t steps = 100;       // steps per timed block
  int64_t rounds = 3;        // blocks per mode, interleaved (off, on, off, on, ...)
  int64_t record_every = 0;  // 0 = the config's train.record_every
  int64_t threads = 1;       // LibTorch intra-op threads
};

}  // namespace

namespace {


std::string default_config() { return find_session_config("copy-rmt.json"); }

}  // namespace

static CLI::App* add_bench_recording_command(CLI::App* bench, BenchRecordingOptions& o) {
  auto* c = bench->add_subcommand("recording", "training step time with the default session recording vs recording off");
  c->add_option("--config", o.config, "training config (default sessions/copy-rmt.json)");
  c->add_option("--steps", o.steps, "steps per timed block (default 100)");
  c->add_option("--rounds", o.rounds, "blocks per mode, interleaved (default 3)");
  c->add_option("--record-every", o.record_every, "probe recording interval (default: the config's train.record_every)");
  c->add_option("--threads", o.threads, "LibTorch intra-op threads (default 1)");
  return c;
}

static int run_bench_recording(const BenchRecordingOptions& o, std::ostream& out) {
  if (o.steps < 1 || o.steps > 1000000) throw UsageError("--steps must be in 1..1000000");
  if (o.rounds < 1 || o.rounds > 100) throw UsageError("--rounds must be in 1..100");
  if (o.record_every < 0) throw UsageError("--record-every must be >= 0 (0 = the config's)");
  if (o.threads < 1 || o.threads > 256) throw UsageError("--threads must be in 1..256");
  const std::string path = o.config.empty() ? default_config() : o.config;
  TrainingConfig cfg;
  try {
    cfg = TrainingConfig::load(path);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
  if (o.record_every > 0) cfg.train.record_every = o.record_every;
  if (cfg.train.record_every < 1) cfg.train.record_every = TrainConfig{}.record_every;
  cfg.train.steps = 1 << 30;  // never reached; the warm-up and schedule do not matter here
  cfg.train.eval_every = 0;
  torch::set_num_threads(static_cast<int>(o.threads));

  char tmpl[] = "/tmp/mnemo-bench-recording-XXXXXX";
  if (!::mkdtemp(tmpl)) throw UsageError("bench recording: cannot create a temporary directory in /tmp");
  const std::string tmp = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{tmp};
  auto session = io::Session::create(tmp + "/session", {{"kind", "bench"}, {"config", cfg.to_json()}});

  Trainer off(cfg), on(cfg);
  const Document probe = probe_document(on.task(), cfg.train.record_segments, cfg.train.record_example);
  const int64_t seg_len = on.task().segment_len();
  std::vector<double> t_off, t_on, t_record;
  int64_t recordings = 0;
  // Untimed warm-up of both.
  off.train_step();
  on.train_step();
  out << "bench recording: " << path << " (model " << cfg.model.model << ", d " << cfg.model.dim << ", batch "
      << cfg.train.batch << "), " << o.rounds << " x " << o.steps << " steps per mode, probe every "
      << cfg.train.record_every << " steps (" << probe.size() << " tokens), " << o.threads << " thread(s)\n";
  for (int64_t r = 0; r < o.rounds; ++r) {
    {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < o.steps; ++i) off.train_step();
      t_off.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / static_cast<double>(o.steps));
    }
    {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < o.steps; ++i) {
        StepMetrics m = on.train_step();
        const HostMemory mem = host_memory();
        session.append_metrics(step_record(m, static_cast<double>(mem.peak_rss_bytes) / (1024.0 * 1024.0)));
        if (m.step % cfg.train.record_every == 0) {
          const auto r0 = std::chrono::steady_clock::now();
          record_into_session(session, on.model(), probe, seg_len, m.step);
          t_record.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count());
          ++recordings;
        }
      }
      t_on.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / static_cast<double>(o.steps));
    }
  }
  const double a = bench::median(t_off), b = bench::median(t_on);
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-26s %10.3f ms/step  x%.3f\n", "recording off", a * 1e3, 1.0);
  out << buf;
  std::snprintf(buf, sizeof buf, "  %-26s %10.3f ms/step  x%.3f  (%+.1f %%, goal <= +10 %%)\n", "default recording", b * 1e3,
                b / a, (b / a - 1.0) * 100.0);
  out << buf;
  if (!t_record.empty()) {
    std::uintmax_t bytes = 0;
    for (int64_t s : session.trace_steps()) bytes += std::filesystem::file_size(session.trace_path(s));
    std::snprintf(buf, sizeof buf, "  %lld probe recordings: median %.1f ms each, %.1f KiB per trace file\n",
                  static_cast<long long>(recordings), bench::median(t_record) * 1e3,
                  static_cast<double>(bytes) / 1024.0 / static_cast<double>(session.trace_steps().size()));
    out << buf;
  }
  return 0;
}

namespace {
class BenchRecording : public Command {
 public:
  CLI::App* add(CLI::App& parent) override { return add_bench_recording_command(&parent, o_); }
  int run(std::ostream& out) override { return run_bench_recording(o_, out); }

 private:
  BenchRecordingOptions o_;
};
}  // namespace

std::unique_ptr<Command> make_bench_recording() { return std::make_unique<BenchRecording>(); }

}  // namespace mnemo::app
