#include "app/cmd_train.h"

#include "core/train/hash_probe.h"
#include "core/train/lm_metrics.h"

#include "app/cli.h"
#include "app/cli_common.h"
#include "core/io/atomic_file.h"
#include "core/io/session.h"
#include "core/models/factory.h"
#include "core/train/memory_stats.h"
#include "core/train/recorder.h"
#include "core/train/run_log.h"
#include "core/train/trainer.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <optional>
#include <sstream>

namespace mnemo::app {

namespace {

std::atomic<bool> g_stop_requested{false};

std::atomic<bool> g_checkpoint_requested{false};

extern "C" void on_sigint(int) { g_stop_requested.store(true); }
extern "C" void on_sigusr1(int) { g_checkpoint_requested.store(true); }

// Ctrl-C (SIGINT) or SIGTERM sets the stop flag while a run is in progress: the run stops
// after the current step and saves; a second one kills as usual (SA_RESETHAND). SIGUSR1
// asks for a checkpoint after the current step (the desktop app's "Checkpoint now").
class SigintGuard {
 public:
  SigintGuard() {
    g_stop_requested.store(false);
    g_checkpoint_requested.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    installed_int_ = ::sigaction(SIGINT, &sa, &old_int_) == 0;
    installed_term_ = ::sigaction(SIGTERM, &sa, &old_term_) == 0;
    struct sigaction su {};
    su.sa_handler = on_sigusr1;
    sigemptyset(&su.sa_mask);
    installed_usr1_ = ::sigaction(SIGUSR1, &su, &old_usr1_) == 0;
  }
  ~SigintGuard() {
    if (installed_int_) ::sigaction(SIGINT, &old_int_, nullptr);
    if (installed_term_) ::sigaction(SIGTERM, &old_term_, nullptr);
    if (installed_usr1_) ::sigaction(SIGUSR1, &old_usr1_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {}, old_usr1_ {};
  bool installed_int_ = false, installed_term_ = false, installed_usr1_ = false;
};

std::string fmt_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(t / 3600), static_cast<long long>(t / 60 % 60));
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(t / 60), static_cast<long long>(t % 60));
  else std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(t));
  return buf;
}

std::string fmt_rate(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string eval_line(const EvalMetrics& e) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%s%s @ step %lld: loss %.4f  bits/token %.4f  perplexity %.3f  per-char accuracy %.4f  exact match %.4f  "
                "(%lld examples)",
                split_name(e.split), e.zero_memory ? " (memory zeroed)" : "", static_cast<long long>(e.step), e.loss, e.bits_per_token, e.perplexity, e.accuracy,
                e.exact_match, static_cast<long long>(e.examples));
  std::string line = buf;
  for (const auto& [k, v] : e.extra) {
    char item[96];
    std::snprintf(item, sizeof item, "  %s %.4f", k.c_str(), v);
    line += item;
  }
  return line;
}

nlohmann::json eval_json(const EvalMetrics& e) {
  nlohmann::json j = {{"type", "eval"}, {"step", e.step},          {"split", split_name(e.split)}, {"loss", e.loss},
          {"accuracy", e.accuracy}, {"exact_match", e.exact_match}, {"examples", e.examples}, {"chars", e.chars},
          {"bits_per_token", e.bits_per_token}, {"perplexity", e.perplexity}, {"tokens", e.tokens}};
  if (e.segments > 0) j["segments"] = e.segments;
  if (e.zero_memory) j["zero_memory"] = true;
  for (const auto& [k, v] : e.extra) j[k] = v;  // the task's own metrics (e.g. qa: choice_accuracy)
  return j;
}

// Where sessions live by default: --sessions DIR, else $MNEMO_SESSIONS, else
// $XDG_DATA_HOME/mnemoscope/sessions (~/.local/share/mnemoscope/sessions).
std::string sessions_root(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("MNEMO_SESSIONS"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) return std::string(xdg) + "/mnemoscope/sessions";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.local/share/mnemoscope/sessions";
  return "runs";
}

std::string default_out(const std::string& config, const std::string& sessions) {
  std::string base = config;
  auto slash = base.find_last_of('/');
  if (slash != std::string::npos) base = base.substr(slash + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) base.resize(base.size() - 5);
  return sessions_root(sessions) + "/" + (base.empty() ? std::string("train") : base);
}

TrainingConfig config_with_sets(nlohmann::json j, const std::vector<std::string>& sets, const std::string& source);

// Reads the config file, applies the --set overrides and validates.
TrainingConfig load_training_config(const std::string& path, const std::vector<std::string>& sets) {
  std::ifstream in(path);
  if (!in) throw UsageError("--config: file '" + path + "' cannot be opened; check the path");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError("--config: '" + path + "' is not valid JSON: " + e.what());
  }
  return config_with_sets(j, sets, "--config: '" + path + "'");
}

TrainingConfig config_with_sets(nlohmann::json j, const std::vector<std::string>& sets, const std::string& source) {
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--set '" + s + "': use --set key=value, e.g. --set task.segments=4");
    std::string ptr;
    std::stringstream keys(s.substr(0, eq));
    for (std::string part; std::getline(keys, part, '.');) ptr += "/" + part;
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(s.substr(eq + 1));
    } catch (const nlohmann::json::parse_error&) {
      value = s.substr(eq + 1);  // a bare word: a string
    }
    try {
      j[nlohmann::json::json_pointer(ptr)] = value;
    } catch (const nlohmann::json::exception& e) {
      throw UsageError("--set '" + s + "': " + e.what());
    }
  }
  try {
    return TrainingConfig::from_json(j);
  } catch (const ConfigError& e) {
    throw UsageError(source + (sets.empty() ? "" : " with --set") + ": " + e.what());
  }
}

int run_train(const TrainCommands& c, std::ostream& out) {
  if (c.config.empty() && !c.resume) throw UsageError("train: --config is required (e.g. sessions/copy-rmt.json)");
  if (c.resume && c.out.empty() && c.config.empty()) throw UsageError("--resume: pass the session directory with --out DIR");
  const std::string dir = c.out.empty() ? default_out(c.config, c.sessions) : c.out;
  std::optional<io::Session> session;
  std::optional<io::LoadedCheckpoint> resume_from;
  TrainingConfig cfg;
  if (c.resume) {
    try {
      session = io::Session::open(dir);
      resume_from = session->load_latest();
    } catch (const io::SessionError& e) {
      throw UsageError(std::string("--out: ") + e.what());
    }
    if (!resume_from) throw UsageError("--resume: '" + dir + "' has no checkpoint to resume from");
    for (const auto& s : resume_from->skipped) out << "warning: skipped damaged checkpoint " << s << "\n";
    try {
      if (std::string cut = session->repair_metrics_log(); !cut.empty()) out << "warning: " << cut << "\n";
    } catch (const io::IoError& e) {
      throw UsageError(std::string("--resume: ") + e.what());
    }
    if (!c.config.empty()) {
      cfg = load_training_config(c.config, c.sets);
    } else {
      if (!session->manifest().contains("config"))
        throw UsageError("--resume: the session's manifest has no config; pass --config");
      cfg = config_with_sets(session->manifest()["config"], c.sets, "--resume: " + dir + "/manifest.json");
    }
  } else {
    cfg = load_training_config(c.config, c.sets);
    check_out_dir(dir);
  }
  if (c.o_steps && c.o_steps->count()) {
    if (c.steps < 1) throw UsageError("--steps " + std::to_string(c.steps) + " must be >= 1");
    cfg.train.steps = c.steps;
  }

  Trainer trainer(cfg);
  if (resume_from) {
    Checkpoint ck;
    ck.tensors = resume_from->tensors;
    ck.metadata = resume_from->metadata;
    try {
      trainer.restore(ck, resume_from->path);
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--resume: ") + e.what());
    }
    out << "resuming " << dir << " from step " << trainer.step() << " (" << resume_from->path << ")\n";
    // Records after this step (written before a crash) are superseded by what follows.
    session->append_metrics({{"type", "resume"}, {"step", trainer.step()}, {"checkpoint", resume_from->path}}, true);
  } else {
    nlohmann::json manifest = {{"kind", "train"}, {"config", cfg.to_json()}, {"config_path", c.config}};
    try {
      make_dirs(dir);
      session = io::Session::create(dir, manifest);
    } catch (const io::SessionError& e) {
      throw UsageError(std::string("--out: ") + e.what());
    }
  }

  const TaskSource& task = trainer.task();  // the start of a curriculum; trainer.task() follows it
  out << "train: model " << cfg.model.model << " (d " << cfg.model.dim << ", layers " << cfg.model.layers
      << ", heads " << cfg.model.heads << ", memory " << cfg.model.slots << ", segment " << cfg.model.segment_len << ") on "
      << task.name() << " (" << task.length() << " tokens in " << task.segments() << " segments of "
      << task.segment_len() << "), " << cfg.train.steps << " steps of " << cfg.train.batch << ", bptt depth "
      << cfg.train.bptt_depth << " -> " << dir << "\n";
  if (cfg.train.curriculum.enabled)
    out << "curriculum: " << cfg.train.curriculum.to_json().dump() << ", now at " << trainer.segments() << " segments\n";
  if (trainer.step() >= cfg.train.steps) {
    out << "already at step " << trainer.step() << " of " << cfg.train.steps << "; pass --steps N to train longer\n";
    return 0;
  }

  const bool tty = ::isatty(::fileno(stdout)) != 0 && &out == &std::cout;
  const int64_t total = cfg.train.steps, first = trainer.step();
  const int64_t log_every = std::max<int64_t>(1, (total - first) / 50);
  const auto t_start = std::chrono::steady_clock::now();
  auto last_draw = t_start - std::chrono::seconds(1);
  bool line_open = false;
  int64_t last_saved = trainer.step();

  auto save = [&](int64_t step) {
    Checkpoint ck = trainer.checkpoint();
    const std::string path = session->save_checkpoint(step, ck.tensors, ck.metadata);
    last_saved = step;
    return path;
  };
  auto end_line = [&]() {
    if (line_open) out << "\n";
    line_open = false;
  };

  // Probe recordings (core/train/recorder.h): the first test example, every record_every steps.
  std::optional<Document> probe;
  auto make_probe = [&]() {
    if (cfg.train.record_every <= 0) return;
    try {
      probe = probe_document(trainer.task(), cfg.train.record_segments);
    } catch (const std::exception& e) {
      out << "warning: no probe recordings: " << e.what() << "\n";
      probe.reset();
    }
  };
  make_probe();
  int64_t last_recorded = -1;
  auto record = [&](int64_t step) {
    if (!probe || step == last_recorded) return;
    last_recorded = step;
    try {
      record_into_session(*session, trainer.model(), *probe, trainer.task().segment_len(), step);
    } catch (const io::SessionError&) {
      throw;
    } catch (const io::IoError&) {
      throw;
    } catch (const std::exception& e) {
      end_line();
      out << "warning: probe recording at step " << step << " failed and is switched off: " << e.what() << "\n";
      probe.reset();
    }
  };

  if (c.hash_stats_every < 0) throw UsageError("--hash-stats-every must be >= 0");
  std::optional<TaskBatch> probe_batch;
  const std::string hash_csv = dir + "/hash_stats.csv";
  auto record_hash_stats = [&](int64_t step) {
    if (!probe_batch) {
      std::vector<int64_t> idx(static_cast<size_t>(std::min(cfg.train.batch, trainer.task().split_size(Split::kValid))));
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
      probe_batch = trainer.task().batch(Split::kValid, idx, trainer.model()->device());
    }
    const HashStatsAccumulator acc = probe_hash_counts(*trainer.model(), *probe_batch);
    const bool fresh = ::access(hash_csv.c_str(), F_OK) != 0;
    std::ofstream f(hash_csv, std::ios::app);
    if (fresh) f << kHashStatsCsvHeader << "\n";
    f << hash_stats_csv_rows(step, acc);
  };
  if (c.hash_stats_every > 0) {
    if (probe_hash_counts(*trainer.model(), task.batch(Split::kValid, {0}, trainer.model()->device())).empty())
      out << "warning: --hash-stats-every: the model has no hashed projection; no " << hash_csv << "\n";
    else if (trainer.step() == 0)
      record_hash_stats(0);
  }

  TrainCallbacks cb;
  cb.on_step = [&](const StepMetrics& m) {
    if (c.hash_stats_every > 0 && !m.non_finite && m.step % c.hash_stats_every == 0) record_hash_stats(m.step);
    const HostMemory mem = host_memory();
    const nlohmann::json rec = step_record(m, static_cast<double>(mem.peak_rss_bytes) / (1024.0 * 1024.0));
    session->append_metrics(rec);
    if (!m.non_finite && cfg.train.record_every > 0 && m.step % cfg.train.record_every == 0) record(m.step);
    if (!m.non_finite && g_checkpoint_requested.exchange(false)) {
      const std::string path = save(m.step);
      end_line();
      out << "  saved " << path << " (requested)\n" << std::flush;
    }
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t_start).count();
    const double per_step = elapsed / static_cast<double>(std::max<int64_t>(1, m.step - first));
    const bool last = m.step >= total;
    if (tty ? (now - last_draw < std::chrono::milliseconds(200) && !last) : (m.step % log_every != 0 && !last)) return;
    last_draw = now;
    char buf[256];
    std::snprintf(buf, sizeof buf, "step %lld/%lld  loss %.4f  acc %.3f  lr %.2e  |g| %.2f  %s tok/s  ETA %s",
                  static_cast<long long>(m.step), static_cast<long long>(total), m.loss, m.accuracy, m.lr, m.grad_norm,
                  fmt_rate(m.tokens_per_s).c_str(), fmt_duration(per_step * static_cast<double>(total - m.step)).c_str());
    if (tty) {
      out << "\r" << buf << "\033[K" << std::flush;
      line_open = true;
    } else {
      out << buf << "\n" << std::flush;
    }
  };
  cb.on_eval = [&](const EvalMetrics& e) {
    end_line();
    out << "  " << eval_line(e) << "\n" << std::flush;
    session->append_metrics(eval_json(e));
  };
  cb.on_curriculum = [&](const CurriculumChange& ch) {
    end_line();
    out << "  curriculum: " << ch.from << " -> " << ch.to << " segments after step " << ch.step << " (" << ch.reason
        << ")\n" << std::flush;
    session->append_metrics({{"type", "curriculum"}, {"step", ch.step}, {"from", ch.from}, {"to", ch.to},
                             {"segments", ch.to}, {"reason", ch.reason}});
    make_probe();  // the probe document follows the task's new segmentation
    probe_batch.reset();
  };
  cb.on_save = [&](int64_t step) {
    const std::string path = save(step);
    if (!tty) out << "  saved " << path << "\n";
  };

  if (first == 0) record(0);
  TrainOutcome o;
  {
    SigintGuard guard;
    o = trainer.run(cb, &g_stop_requested);
  }
  end_line();
  if (o.non_finite) {
    session->append_metrics({{"type", "error"}, {"step", trainer.step() + 1}, {"message", o.message}});
    out << "training stopped: " << o.message << "\n";
    if (trainer.step() > last_saved) out << "saved " << save(trainer.step()) << " (the last finite weights)\n";
    return 1;
  }
  if (trainer.step() > last_saved) out << "saved " << save(trainer.step()) << "\n";
  if (cfg.train.record_every > 0) record(trainer.step());
  if (o.stopped) {
    out << "interrupted at step " << trainer.step() << "; continue with: mnemoscope train --out " << dir
        << " --resume\n";
    return 130;
  }
  for (Split s : {Split::kValid, Split::kTest})
    for (bool zero : {false, true}) {
      if (zero && !(cfg.train.eval_zero_memory && trainer.has_memory())) continue;
      EvalOptions eo;
      eo.zero_memory = zero;
      EvalMetrics e = trainer.evaluate(s, eo);
      out << "final " << eval_line(e) << "\n";
      auto j = eval_json(e);
      j["final"] = true;
      session->append_metrics(j);
    }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  out << "done: " << o.steps_done << " steps in " << fmt_duration(secs) << "; checkpoints in " << dir
      << "/checkpoints\n";
  return 0;
}

int run_eval(const TrainCommands& c, std::ostream& out) {
  WeightsFile file;
  try {
    file = read_weights_file(c.checkpoint);
  } catch (const io::SafetensorsError& e) {
    throw UsageError(std::string("--checkpoint: ") + e.what());
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--checkpoint: ") + e.what());
  }
  // Without --config the checkpoint's own training config (curriculum segments included).
  if (c.eval_config.empty() && file.training_config.is_null())
    throw UsageError("--checkpoint '" + c.checkpoint + "' names no training config (a " + file.kind +
                     "); pass --config with the config it was trained with");
  TrainingConfig cfg = c.eval_config.empty()
                           ? config_with_sets(file.training_config, c.sets, "--checkpoint '" + c.checkpoint + "' config")
                           : load_training_config(c.eval_config, c.sets);
  Split split;
  try {
    split = parse_split(c.split, "--split");
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  if (c.batches == 0 || c.batches < -2) throw UsageError("--batches must be >= 1, or -1 for the whole split");
  MemoryModel model;
  try {
    model = make_model(cfg.model, cfg.train.seed);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
  try {
    load_weights_checked(*model, cfg.model, file, c.eval_config.empty() ? "the --set flags" : c.eval_config);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--checkpoint: ") + e.what());
  }
  auto task = cfg.make_task();
  try {
    task->configure_model(*model);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
  const int64_t batches = c.batches == -2 ? cfg.train.eval_batches : c.batches;
  ScoreTotals s = evaluate_model(*model, *task, split, batches, cfg.train.batch, c.zero_memory);
  EvalMetrics e;
  e.step = file.step;
  e.split = split;
  e.zero_memory = c.zero_memory;
  e.segments = task->segments();
  e.extra = task->finish_metrics(s.extra);
  e.loss = s.loss();
  e.bits_per_token = bits_per_token(s.loss_sum, s.loss_count);
  e.perplexity = perplexity(s.loss_sum, s.loss_count);
  e.tokens = s.loss_count;
  e.accuracy = s.accuracy();
  e.exact_match = s.exact_match();
  e.examples = s.examples;
  e.chars = s.chars;
  if (c.json) {
    auto j = eval_json(e);
    j["checkpoint"] = c.checkpoint;
    j["model"] = cfg.model.model;
    j["task"] = task->name();
    j["zero_memory"] = c.zero_memory;
    out << j.dump() << "\n";
  } else {
    out << cfg.model.model << " on " << task->name() << " (" << task->segments() << " segments)"
        << (c.zero_memory ? ", memory zeroed between segments" : "") << "\n"
        << eval_line(e) << "\n";
  }
  return 0;
}

}  // namespace

std::string default_session_dir(const std::string& config, const std::string& sessions) {
  return default_out(config, sessions);
}

void add_train_commands(CLI::App& app, TrainCommands& c) {
  c.train = app.add_subcommand("train", "train a model on a task (sessions/<task>-<model>.json)");
  c.train->add_option("--config", c.config, "training config JSON: {model, task, train}");
  c.train->add_option("--out", c.out, "session directory (default SESSIONS/<config name>)");
  c.train->add_option("--sessions", c.sessions,
                      "where sessions live when --out is not given (default $MNEMO_SESSIONS, else ~/.local/share/mnemoscope/sessions)");
  c.o_steps = c.train->add_option("--steps", c.steps, "total optimizer steps (overrides train.steps)");
  c.train->add_option("--hash-stats-every", c.hash_stats_every,
                      "every N steps (and at the start), bucket statistics of the hashed projections to DIR/hash_stats.csv");
  c.train->add_flag("--resume", c.resume, "continue --out from its latest checkpoint");
  c.train->add_option("--set", c.sets, "override a config field: --set task.segments=4 (repeatable)");

  c.eval = app.add_subcommand("eval", "evaluate a checkpoint on a task split");
  c.eval->add_option("--config", c.eval_config,
                     "training config JSON the checkpoint was made with (default: the checkpoint's own)");
  c.eval->add_option("--checkpoint", c.checkpoint, "checkpoint (.safetensors) from train")->required();
  c.eval->add_option("--split", c.split, "train | valid | test (default test)");
  c.eval->add_option("--batches", c.batches, "batches of train.batch examples (default train.eval_batches; -1 = all)");
  c.eval->add_flag("--zero-memory", c.zero_memory, "ablation: zero the memory between segments");
  c.eval->add_flag("--json", c.json, "print one JSON object");
  c.eval->add_option("--set", c.sets, "override a config field: --set task.segments=4 (repeatable)");
}

int run_train_commands(const TrainCommands& c, std::ostream& out) {
  if (c.train && *c.train) return run_train(c, out);
  if (c.eval && *c.eval) return run_eval(c, out);
  return -1;
}

}  // namespace mnemo::app
