// `mnemoscope train` (core/train/trainer.h).
//
//   train --config sessions/<name>.json [--out DIR | --sessions ROOT] [--steps N] [--set key=value]... [--resume]
//     Trains into a session directory DIR (default ROOT/<name>, ROOT = $MNEMO_SESSIONS or
//     ~/.local/share/mnemoscope/sessions): manifest.json, traces/ (probe recordings),
//     checkpoints/step-N.safetensors + latest, metrics.log (docs/formats.md#sessions). Shows a progress
//     line (\r updates on a TTY, plain lines otherwise), evaluates every eval_every steps,
//     saves every save_every steps and at the end; Ctrl-C stops after the current step and
//     saves. --resume continues DIR from its latest checkpoint. --init-from W starts a new
//     session from the model weights in W (a zoo model, a checkpoint, an export-weights file
//     or a session), which must fit the config's model; the optimizer starts fresh
//     (fine-tuning). --set overrides one field of
//     the config by its dotted path, the value read as JSON (a bare word is a string):
//     --set task.segments=4 --set model.segment_len=19 --set model.slots=19
//     --data PATH sets task.corpus of a "text" task (core/data/text_task.h) before the --set's;
//     without --config it fine-tunes the zoo's text model on it (sessions/text-finetune.json, with the
//     curriculum its memory needs; app/commands/train_text.h), --random trains
//     sessions/text-memformer.json from scratch. A text task's run ends with what its memory
//     saves against a reset on the held-out text.
//     --hash-stats-every N (models with "linear": "hashed"): at the start and every N steps,
//     a forward pass over the first train.batch valid examples records the bucket statistics
//     of the first and last table of every hashed projection in DIR/hash_stats.csv
//     (core/train/hash_probe.h; columns step,path,table,tables,buckets,lookups,entropy,...).
#include "app/commands/train.h"
#include "app/commands/commands.h"
#include "app/commands/train_text.h"

#include "app/cli/assets.h"
#include "app/cli/format.h"

#include "core/train/checkpoint.h"
#include "core/train/lm_metrics.h"

#include "app/cli/cli.h"
#include "app/cli/flags.h"
#include "core/io/atomic_file.h"
#include "core/io/config_fields.h"
#include "core/io/json_file.h"
#include "core/io/session.h"
#include "core/platform/memory.h"
#include "core/models/factory.h"
#include "core/train/trainer.h"
#include "core/train/training_run.h"
#include "core/dist/process_group.h"
#include "core/nn/torch_compat.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

namespace mnemo::app {

namespace {

std::atomic<bool> g_stop_requested{false};

std::atomic<bool> g_checkpoint_requested{false};

std::atomic<int64_t> g_first_stop_ns{0};

int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// The first SIGINT / SIGTERM / SIGHUP asks to stop. Another within a second is the same
// request delivered twice (a terminal's Ctrl-C plus the --nproc launcher's SIGTERM, or a
// scheduler signalling the whole process group) and is ignored; a later one kills as usual.
// A hang-up (the terminal closed) also ignores SIGPIPE from then on: the run's output may go
// to a pipe whose reader the hang-up ended (`train ... | tee log`), and writing the last lines
// must not kill it before its checkpoint is saved.
extern "C" void on_sigint(int sig) {
  const int64_t now = monotonic_ns();
  if (sig == SIGHUP) ::signal(SIGPIPE, SIG_IGN);
  int64_t first = 0;
  if (g_first_stop_ns.compare_exchange_strong(first, now)) {
    g_stop_requested.store(true);
    return;
  }
  if (now - first < 1000000000LL) return;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
extern "C" void on_sigusr1(int) { g_checkpoint_requested.store(true); }

// Ctrl-C (SIGINT), SIGTERM or a hang-up (SIGHUP: the terminal closed) sets the stop flag while
// a run is in progress: the run stops after the current step and saves; a second one (more
// than a second later) kills. SIGUSR1
// asks for a checkpoint after the current step (the desktop app's "Checkpoint now").
class SigintGuard {
 public:
  SigintGuard() {
    g_stop_requested.store(false);
    g_checkpoint_requested.store(false);
    g_first_stop_ns.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    installed_int_ = ::sigaction(SIGINT, &sa, &old_int_) == 0;
    installed_term_ = ::sigaction(SIGTERM, &sa, &old_term_) == 0;
    // A hang-up saves too, unless it was ignored on purpose (`nohup train ...`): then it stays so.
    struct sigaction cur {};
    if (::sigaction(SIGHUP, nullptr, &cur) == 0 && cur.sa_handler != SIG_IGN)
      installed_hup_ = ::sigaction(SIGHUP, &sa, &old_hup_) == 0;
    struct sigaction su {};
    su.sa_handler = on_sigusr1;
    sigemptyset(&su.sa_mask);
    installed_usr1_ = ::sigaction(SIGUSR1, &su, &old_usr1_) == 0;
  }
  ~SigintGuard() {
    // After a stop request the handler stays: a copy of the same request may still be on its
    // way (the --nproc launcher's forwarded SIGTERM) while the run saves and exits.
    const bool stopping = g_first_stop_ns.load() != 0;
    if (installed_int_ && !stopping) ::sigaction(SIGINT, &old_int_, nullptr);
    if (installed_term_ && !stopping) ::sigaction(SIGTERM, &old_term_, nullptr);
    if (installed_hup_ && !stopping) ::sigaction(SIGHUP, &old_hup_, nullptr);
    if (installed_usr1_) ::sigaction(SIGUSR1, &old_usr1_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {}, old_hup_ {}, old_usr1_ {};
  bool installed_int_ = false, installed_term_ = false, installed_hup_ = false, installed_usr1_ = false;
};

// The distributed options of the command line: RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR /
// MASTER_PORT, overridden by --rank / --world-size / --master; std::nullopt for one process.
std::optional<dist::DistOptions> dist_options(const TrainOptions& c) {
  std::optional<dist::DistOptions> d = dist::DistOptions::from_env();
  const bool flags = c.rank >= 0 || c.world_size >= 0 || !c.master.empty();
  if (!d && !flags) return std::nullopt;
  if (!d) d = dist::DistOptions{};
  if (c.world_size >= 0) {
    d->world_size = c.world_size;
    d->world_from = "--world-size";
  }
  if (c.rank >= 0) {
    d->rank = c.rank;
    d->rank_from = "--rank";
    d->local_rank = c.rank;
    if (const char* lr = std::getenv("LOCAL_RANK")) d->local_rank = std::atoi(lr);
  }
  if (c.rank >= 0 && c.world_size < 0 && !std::getenv("WORLD_SIZE"))
    throw UsageError("--rank " + std::to_string(c.rank) + " needs --world-size N (or WORLD_SIZE)");
  if (c.world_size > 1 && c.rank < 0 && !std::getenv("RANK"))
    throw UsageError("--world-size " + std::to_string(c.world_size) + " needs --rank R (or RANK)");
  if (!c.master.empty()) {
    dist::parse_master(c.master, "--master", &d->master_addr, &d->master_port);
    d->addr_from = d->port_from = "--master";
  }
  if (!(c.dist_timeout >= 1 && c.dist_timeout <= 86400))
    throw UsageError("--dist-timeout " + std::to_string(c.dist_timeout) + " must be in 1..86400 seconds");
  d->timeout = std::chrono::milliseconds(static_cast<int64_t>(c.dist_timeout * 1000));
  d->backend = c.dist_backend;
  d->validate();
  if (d->world_size <= 1) return std::nullopt;
  return d;
}

// --device: the CPU, or a CUDA device (a distributed rank's is its LOCAL_RANK-th GPU).
// UsageError when CUDA is asked for and not there, or NCCL without CUDA tensors.
torch::Device train_device(const TrainOptions& c, const std::optional<dist::DistOptions>& d) {
  if (c.device == "cpu") {
    if (d && d->backend == "nccl")
      throw UsageError("--dist-backend nccl reduces CUDA tensors: add --device cuda (or use --dist-backend gloo)");
    return torch::kCPU;
  }
  const int gpus = cuda_devices();
  const int index = d ? d->local_rank : 0;
  if (gpus == 0)
    throw UsageError("--device cuda: this LibTorch sees no CUDA device (a CPU build, or no GPU on this machine); "
                     "use --device cpu");
  if (index >= gpus)
    throw UsageError("--device cuda: rank " + std::to_string(d->rank) + " wants GPU " + std::to_string(index) +
                     " (LOCAL_RANK) and this machine has " + std::to_string(gpus));
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

// --data: task.corpus as the first --set, after checking that the config trains a "text" task.
TrainOptions with_data_flag(TrainOptions c, std::ostream& out) {
  if (c.random && c.data.empty()) throw UsageError("--random goes with --data PATH: it trains a Memformer from scratch on PATH");
  if (c.data.empty()) return c;
  if (c.config.empty() && !c.resume) {
    // Without a config: the zoo's text model fine-tuned with the curriculum its memory needs
    // (app/commands/train_text.h); --random: a Memformer from scratch.
    if (c.random || !c.init_from.empty()) c.config = find_session_config(c.random ? "text-memformer.json" : "text-finetune.json");
    else default_text_training(c, out);
  }
  if (!c.config.empty()) {
    std::string task = "?";
    try {
      const nlohmann::json j = io::read_json_config(c.config);
      if (j.contains("task") && j["task"].is_object()) task = j["task"].value("name", std::string("?"));
    } catch (const ConfigError&) {
      return c;  // the config's own error is reported when it is loaded
    }
    if (task != "text")
      throw UsageError("--data sets the corpus of a \"text\" task, but the task of --config '" + c.config + "' is '" +
                       task + "'; take a text config (e.g. sessions/text-memformer.json) or leave out --data");
  }
  const nlohmann::json corpus = c.data.size() == 1 ? nlohmann::json(c.data[0]) : nlohmann::json(c.data);
  c.sets.insert(c.sets.begin(), "task.corpus=" + corpus.dump());
  return c;
}

// One `train` run in this process: the command line around a TrainingRun
// (core/train/training_run.h), which owns the session, the checkpoints, the probe recordings,
// the hash statistics and the end-of-run evaluations. This class keeps the flags and what
// they mean (--resume, --init-from, --steps, --hash-stats-every), the signals, the
// distributed process group and the console: it implements the run's observer with the
// progress line and prints every message. Rank 0 (or the only process) is the writer: it
// reads the config and the session and prints; another rank trains rank 0's config and
// prints only errors. run() takes the parts in order: set-up (options, inputs, the process
// group, the trainer), the session (a new one, or a resume record), the loop, then the end
// (save, final evaluations) or a stop on an error.
class TrainRun : public TrainingRunObserver {
 public:
  TrainRun(const TrainOptions& c, std::optional<dist::DistOptions> dopt, torch::Device device, std::ostream& out_main)
      : c_(c), dopt_(std::move(dopt)), device_(device), writer_(!dopt_ || dopt_->rank == 0),
        out_(writer_ ? out_main : quiet_) {}
  int run();

  // TrainingRunObserver: the console.
  void on_notice(const std::string& line) override;
  void on_step(const StepMetrics& m) override;
  void on_eval(const EvalMetrics& e) override;
  void on_curriculum(const CurriculumChange& ch) override;
  void on_save(int64_t step, const std::string& path, SaveReason why) override;
  void on_final_eval(const EvalMetrics& e) override;

 private:
  // Set-up: nothing is written until open_session().
  void check_options();
  void load_config();
  void check_resume_point();
  void read_init_weights();
  void join_group();
  void build_trainer();
  void start_from_init_weights();
  void open_session();
  void print_start() const;
  // The loop.
  void prepare_loop();
  std::string resume_command() const;
  void end_line();
  void print_progress(const StepMetrics& m);
  std::optional<int> train(TrainOutcome& o);
  // The end.
  int stop_on_lost_rank(const dist::PeerError& e);
  [[noreturn]] void stop_on_out_of_memory(const std::string& oom);
  int finish(const TrainOutcome& o);

  const TrainOptions& c_;
  const std::optional<dist::DistOptions> dopt_;
  const torch::Device device_;
  const bool writer_;
  std::ostream quiet_{nullptr};
  std::ostream& out_;

  bool steps_given_ = false;
  std::string dir_;
  std::optional<TrainingRun> run_;
  TrainingConfig cfg_;
  std::optional<WeightsFile> init_;  // rank 0 reads them and hands them to TrainingRun::init_from; the other ranks sync
  std::unique_ptr<dist::ProcessGroup> pg_;
  bool finals_only_ = false;  // the steps are done and the end-of-run evaluations are not all written

  bool tty_ = false;
  int64_t total_ = 0, first_ = 0, log_every_ = 1;
  std::chrono::steady_clock::time_point t_start_, last_draw_;
  bool line_open_ = false;
};

// Validate everything before writing anything (a resume repairs metrics.log: only after).
void TrainRun::check_options() {
  const TrainOptions& c = c_;
  if (writer_ && c.config.empty() && !c.resume) throw UsageError("train: --config is required (e.g. sessions/copy-rmt.json)");
  if (c.hash_stats_every < 0) throw UsageError("--hash-stats-every must be >= 0");
  steps_given_ = (c.o_steps && c.o_steps->count()) || c.steps_override;
  if (steps_given_ && c.steps < 1) throw UsageError("--steps " + std::to_string(c.steps) + " must be >= 1");
  if (writer_ && c.resume && c.out.empty() && c.config.empty())
    throw UsageError("--resume: pass the session directory with --out DIR");
  if (!c.init_from.empty() && c.resume)
    throw UsageError("--init-from starts a new session from a model's weights and --resume continues one: pass one of them");
  if (c.init_matching && c.init_from.empty())
    throw UsageError("--init-matching takes the matching tensors of --init-from's weights: pass --init-from W too");
  dir_ = c.out.empty() ? (c.config.empty() ? std::string() : io::default_session_dir(c.config, c.sessions)) : c.out;
  run_.emplace(dir_, writer_, *this);
}

// The checkpoint a resume goes on from is the newest that loads (io::Session::load_latest).
// A newer one that could not be read at all (permissions, not a file) may hold good weights
// that the run would overwrite on reaching its step: refused, saying how to get either. A
// newer one that is damaged is only reported (it loads nothing to lose); a `latest` that
// names an older step than the one taken is reported too.
void TrainRun::check_resume_point() {
  const io::LoadedCheckpoint& r = *run_->resume_point();
  const std::string ckdir = dir_ + "/checkpoints";
  if (!r.unreadable.empty()) {
    std::string files;
    for (const auto& u : r.unreadable) files += (files.empty() ? "" : "; ") + u;
    throw UsageError("--resume: " + files + ". " + (r.unreadable.size() == 1 ? "It is" : "They are") +
                     " newer than step " + std::to_string(r.step) + ", the newest checkpoint that loads, and resuming " +
                     "from there would overwrite " + (r.unreadable.size() == 1 ? "it" : "them") +
                     ". Make it readable (see its owner and mode with `ls -l " + shell_quote(ckdir) +
                     "`; e.g. `chmod u+r FILE`, or run as its owner) and run this again; or, to give it up and resume " +
                     "from step " + std::to_string(r.step) + ", move it out of " + shell_quote(ckdir) + " first");
  }
  for (const auto& s : r.skipped) out_ << "warning: skipped checkpoint " << s << "\n";
  if (r.latest_names >= 0 && r.latest_names < r.step)
    out_ << "note: " << ckdir << "/latest names step " << r.latest_names << ", but the checkpoint of step " << r.step
         << " is newer and loads: resuming from step " << r.step << ", so no step is lost (to go on from step "
         << r.latest_names << " instead, move the newer checkpoints out of " << shell_quote(ckdir) << " first)\n";
}

// Rank 0 reads the config and the session; the other ranks get the config from it
// (join_group): another machine needs no copy of the session.
void TrainRun::load_config() {
  const TrainOptions& c = c_;
  if (writer_ && c.resume) {
    try {
      run_->open_existing();
    } catch (const io::SessionError& e) {
      throw UsageError(std::string("--out: ") + e.what());
    }
    if (run_->resume_point()) check_resume_point();
    const io::Session& session = run_->session();
    if (!c.config.empty()) {
      cfg_ = load_training_config(c.config, c.sets);
    } else {
      if (!session.manifest().contains("config"))
        throw UsageError("--resume: the session's manifest has no config; pass --config");
      cfg_ = config_with_sets(session.manifest()["config"], c.sets, "--resume: " + dir_ + "/manifest.json");
    }
  } else if (writer_) {
    cfg_ = load_training_config(c.config, c.sets);
    check_out_dir(dir_);
  }
}

void TrainRun::read_init_weights() {
  if (!writer_ || c_.init_from.empty()) return;
  try {
    // A zoo model may be named as in the model picker and --compare-model ("memformer-copy"):
    // a path that exists wins over the name.
    std::string from = c_.init_from;
    if (!app::exists(from) && from.find('/') == std::string::npos) {
      try {
        from = find_asset("models/" + from + ".safetensors");
      } catch (const InputError&) {
        // Not a zoo name either: read_weights_file names the missing file below.
      }
    }
    init_ = read_weights_file(from);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--init-from: ") + e.what());
  }
}

// Distributed: join the group (RendezvousError: exit 2, nothing written yet), then every
// rank trains rank 0's config.
void TrainRun::join_group() {
  if (!dopt_) return;
  pg_ = dist::ProcessGroup::connect(*dopt_);
  const std::string cj = pg_->broadcast_bytes(writer_ ? cfg_.to_json().dump() : std::string(), "broadcast of the config");
  if (!writer_) cfg_ = TrainingConfig::from_json(mnemo::io::parse_json(cj));
}

// The trainer, started from --init-from's weights or the checkpoint resumed; every rank
// starts from rank 0's weights, optimizer state and step (and curriculum).
void TrainRun::build_trainer() {
  TrainingRun& run = *run_;
  run.build(cfg_, device_);  // before the session directory is made
  try {
    run.check_probe_example();  // also before it
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  run.set_process_group(pg_.get());  // ConfigError when train.batch < the ranks
  for (const auto& w : run.trainer().task().warnings()) out_ << "warning: " << w << "\n";
  if (const auto& t = cfg_.task; t.contains("split") && t["split"].is_object()) {
    out_ << "split by document:";
    for (const char* s : {"train", "valid", "test"})
      if (t["split"].contains(s))
        out_ << " " << s << " " << t["split"][s].value("ranges", int64_t{0}) << " ranges ("
             << t["split"][s].value("bytes", int64_t{0}) << " bytes)";
    out_ << "\n";
  }
  if (init_) start_from_init_weights();
  try {
    run.restore_resume_point();
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--resume: ") + e.what());
  }
  run.sync();
}

// --init-from W [--init-matching]: the model's weights from W; the optimizer starts fresh.
void TrainRun::start_from_init_weights() {
  const std::optional<MatchedWeights>* matched = nullptr;
  try {
    matched = &run_->init_from(std::move(*init_), c_.init_matching, c_.config,
                               "Fine-tuning needs the model the weights were trained with: set those fields with --set "
                               "or take that config; or take only the tensors that fit with --init-matching");
  } catch (const Error& e) {
    throw UsageError(std::string("--init-from: ") + e.what());
  }
  init_.reset();  // the run holds them now
  const WeightsFile& w = *run_->init_weights();
  out_ << "initialised from " << w.path << " (a " << w.kind;
  if (w.step >= 0) out_ << ", step " << w.step;
  out_ << "); the optimizer starts fresh\n";
  if (*matched) {
    const MatchedWeights& m = **matched;
    auto list = [](const std::vector<std::string>& names) { return names.empty() ? "none" : join_names(names); };
    out_ << "--init-matching: " << m.taken.size() << " of the model's " << m.taken.size() + m.fresh.size()
         << " tensors from the file; initialised as the config's seed gives them: " << list(m.fresh)
         << "; not used from the file: " << list(m.unused) << "\n";
  }
  // train.seed only initialises the model (and seeds its dropout): with every weight from the
  // file and no dropout, runs that differ only in it are the same run.
  if ((!*matched || (*matched)->fresh.empty()) && !run_->model_has_dropout())
    out_ << "note: every weight comes from the file and the model has no dropout, so train.seed changes nothing in "
            "this run; task.seed draws other training examples (for a corpus of several files, also another split)\n";
}

// Everything checked: now the session may change. A resume cuts a torn tail, so records
// appended from here on are readable, and appends its record; a new session is created. A
// finished and complete session is left as it is (run() says "already at step").
void TrainRun::open_session() {
  if (!writer_) return;  // the other ranks write nothing
  TrainingRun& run = *run_;
  const int64_t step = run.trainer().step();
  const int world = run.world_size();
  if (!c_.resume) {
    make_out_dir(dir_, c_.out.empty() ? "--sessions" : "--out");
    try {
      run.create_session(c_.config);
    } catch (const io::SessionError& e) {
      throw UsageError(std::string("--out: ") + e.what());
    }
    return;
  }
  if (step >= cfg_.train.steps && !finals_only_) return;
  try {
    if (std::string cut = run.repair_log(); !cut.empty()) out_ << "warning: " << cut << "\n";
  } catch (const io::IoError& e) {
    throw UsageError(std::string("--resume: ") + e.what());
  }
  // A session stopped before its first checkpoint starts again from step 0 with its own
  // config (the records before are superseded).
  if (run.resume_point())
    out_ << "resuming " << dir_ << " from step " << step << " (" << run.resume_point()->path << ")";
  else
    out_ << "resuming " << dir_ << " from step 0 (it stopped before its first checkpoint was saved)";
  if (world > 1) out_ << " on " << world << " ranks";
  out_ << "\n";
  run.append_resume_record();
}

void TrainRun::print_start() const {
  const Trainer& trainer = run_->trainer();
  const TaskSource& task = trainer.task();  // the start of a curriculum
  const TrainingConfig& cfg = cfg_;
  const int world = run_->world_size();
  out_ << "train: model " << cfg.model.model << " (d " << cfg.model.dim << ", layers " << cfg.model.layers
       << ", heads " << cfg.model.heads << ", memory " << cfg.model.slots << ", segment " << cfg.model.segment_len << ") on "
       << task.name() << " (" << task.length() << " tokens in " << task.segments() << " segments of "
       << task.segment_len() << "), " << cfg.train.steps << " steps of " << cfg.train.batch << ", bptt depth "
       << cfg.train.bptt_depth << " -> " << dir_ << "\n";
  if (world > 1)
    out_ << "distributed: " << world << " ranks (" << pg_->backend() << ", master " << dopt_->master_addr << ":"
         << dopt_->master_port << ", timeout " << c_.dist_timeout << " s); each trains on " << cfg.train.batch / world
         << (cfg.train.batch % world ? "-" + std::to_string(cfg.train.batch / world + 1) : std::string())
         << " examples of every global batch of " << cfg.train.batch << "\n";
  if (cfg.train.curriculum.enabled)
    out_ << "curriculum: " << cfg.train.curriculum.to_json().dump() << ", now at " << trainer.segments() << " segments\n";
}

// The progress line's pace, the probe and --hash-stats-every's first statistics.
void TrainRun::prepare_loop() {
  TrainingRun& run = *run_;
  tty_ = ::isatty(::fileno(stdout)) != 0 && &out_ == &std::cout;
  total_ = cfg_.train.steps;
  first_ = run.trainer().step();
  log_every_ = std::max<int64_t>(1, (total_ - first_) / 50);
  t_start_ = std::chrono::steady_clock::now();
  last_draw_ = t_start_ - std::chrono::seconds(1);
  run.prepare();
  if (!run.start_hash_stats(c_.hash_stats_every))
    out_ << "warning: --hash-stats-every: the model has no hashed projection; no " << run.hash_stats_path() << "\n";
  run.set_continue_hint(resume_command());
}

// The command that continues this run: a resume's --steps and --set's are not in the session's
// manifest (a new run's are), so they are given again.
std::string TrainRun::resume_command() const {
  std::string cmd = "mnemoscope train --out " + shell_quote(dir_) + " --resume";
  if (run_->world_size() > 1) cmd += " --nproc " + std::to_string(run_->world_size());
  if (c_.resume) {
    if (steps_given_) cmd += " --steps " + std::to_string(cfg_.train.steps);
    for (const auto& set : c_.sets) cmd += " --set " + shell_quote(set);
  }
  return cmd;
}

void TrainRun::end_line() {
  if (line_open_) out_ << "\n";
  line_open_ = false;
}

void TrainRun::on_notice(const std::string& line) {
  end_line();
  out_ << line << "\n";
}

void TrainRun::on_step(const StepMetrics& m) { print_progress(m); }

// On a TTY a line rewritten at most 5 times a second, else one line about every 2% of the run.
void TrainRun::print_progress(const StepMetrics& m) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - t_start_).count();
  const double per_step = elapsed / static_cast<double>(std::max<int64_t>(1, m.step - first_));
  const bool last = m.step >= total_;
  if (tty_ ? (now - last_draw_ < std::chrono::milliseconds(200) && !last) : (m.step % log_every_ != 0 && !last)) return;
  last_draw_ = now;
  char buf[256];
  std::snprintf(buf, sizeof buf, "step %lld/%lld  loss %.4f  acc %.3f  lr %.2e  |g| %.2f  %s tok/s  ETA %s",
                static_cast<long long>(m.step), static_cast<long long>(total_), m.loss, m.accuracy, m.lr, m.grad_norm,
                fmt_rate(m.tokens_per_s).c_str(), fmt_duration(per_step * static_cast<double>(total_ - m.step)).c_str());
  if (tty_) {
    out_ << "\r" << buf << "\033[K" << std::flush;
    line_open_ = true;
  } else {
    out_ << buf << "\n" << std::flush;
  }
}

void TrainRun::on_eval(const EvalMetrics& e) {
  end_line();
  out_ << "  " << eval_line(e) << "\n" << std::flush;
}

void TrainRun::on_curriculum(const CurriculumChange& ch) {
  end_line();
  out_ << "  curriculum: " << ch.from << " -> " << ch.to << " segments after step " << ch.step << " (" << ch.reason
       << ")\n" << std::flush;
}

// A scheduled checkpoint is named on plain output (a TTY's progress line would be broken up);
// one asked for (SIGUSR1) always; the end's (SaveReason::kEnd) by finish() and the stops, which
// say why it was saved.
void TrainRun::on_save(int64_t step, const std::string& path, SaveReason why) {
  if (why == SaveReason::kRequested) {
    end_line();
    out_ << "  saved " << path << " (requested)\n" << std::flush;
  } else if (why == SaveReason::kScheduled && !tty_) {
    out_ << "  saved " << path << "\n";
  }
}

void TrainRun::on_final_eval(const EvalMetrics& e) { out_ << "final " << eval_line(e) << "\n"; }

// Trains to the end, the stop flag or a non-finite loss (only the final evaluations when
// the steps are done). Out of memory in a step (or a recording, an evaluation, a save)
// stops training with exit code 2 and a message naming the step and the size asked for; the
// checkpoints saved before stay as they are (each is written atomically), so `--resume`
// continues from them. Returns the exit code when a lost rank stopped the run.
std::optional<int> TrainRun::train(TrainOutcome& o) {
  try {
    if (finals_only_) {
      out_ << "step " << run_->trainer().step() << " was reached before the run stopped; writing its final evaluations\n";
    } else {
      SigintGuard guard;
      o = run_->train(&g_stop_requested, &g_checkpoint_requested);
    }
  } catch (const dist::PeerError& e) {
    return stop_on_lost_rank(e);
  } catch (const std::exception& e) {
    auto oom = platform::out_of_memory_message(e);
    if (!oom) {
      end_line();
      throw;
    }
    stop_on_out_of_memory(*oom);
  }
  return std::nullopt;
}

// A rank died or hung: every survivor stops. Rank 0's weights are those after the last
// step every rank completed; it saves them so --resume loses nothing.
int TrainRun::stop_on_lost_rank(const dist::PeerError& e) {
  end_line();
  std::cerr << "mnemoscope: error: " << e.what() << "\n" << std::flush;
  if (!writer_) return 1;
  const int world = run_->world_size();
  const int64_t step = run_->trainer().step();
  run_->append_error(step + 1, e.what());
  if (auto path = run_->save_if_unsaved()) out_ << "saved " << *path << " (the last step every rank completed)\n";
  out_ << "training stopped at step " << step << "; continue with: mnemoscope train --out " << shell_quote(dir_)
       << " --resume" << (world > 1 ? " --nproc " + std::to_string(world) : std::string()) << "\n" << std::flush;
  return 1;
}

void TrainRun::stop_on_out_of_memory(const std::string& oom) {
  end_line();
  if (!writer_) throw platform::OutOfMemoryError(oom + ": lower train.batch, model.segment_len or the model size");
  const auto steps = run_->checkpoint_steps();
  const std::string kept = steps.empty() ? "no checkpoint was saved yet"
                                         : "the last checkpoint (step " + std::to_string(steps.back()) + ") is kept";
  try {
    run_->append_error(run_->trainer().step() + 1, oom, true);
  } catch (const std::exception&) {
    // The log may not be writable with no memory left; the message still goes out below.
  }
  throw platform::OutOfMemoryError(oom + "; " + kept + ": lower train.batch, model.segment_len or the model size, " +
                                   "e.g. `mnemoscope train --out " + shell_quote(dir_) + " --resume --set train.batch=" +
                                   std::to_string(std::max<int64_t>(1, cfg_.train.batch / 2)) + "`");
}

// After the loop: the other ranks leave; rank 0 saves the last step, records the probe and,
// unless the run was stopped, writes the final evaluations.
int TrainRun::finish(const TrainOutcome& o) {
  end_line();
  if (!writer_) return o.non_finite ? 1 : o.stopped ? 130 : 0;
  TrainingRun& run = *run_;
  run.leave_group();  // the other ranks leave now: rank 0 saves and evaluates alone
  const int64_t step = run.trainer().step();
  if (o.non_finite) {
    run.append_error(step + 1, o.message);
    out_ << "training stopped: " << o.message << "\n";
    if (auto path = run.save_if_unsaved()) out_ << "saved " << *path << " (the last finite weights)\n";
    return 1;
  }
  if (auto path = run.save_if_unsaved()) out_ << "saved " << *path << "\n";
  if (!finals_only_) run.record_final_probe();
  if (o.stopped) {
    out_ << "interrupted at step " << step << "; continue with: mnemoscope train --out " << shell_quote(dir_)
         << " --resume\n";
    return 130;
  }
  run.final_evaluations();
  // A text model: what its memory saves on the held-out text, with a warning when nothing.
  try {
    report_text_memory_gain(*run.trainer().model(), cfg_, 256, out_);
  } catch (const Error& e) {
    out_ << "memory: not measured (" << e.what() << ")\n";
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
  out_ << "done: " << o.steps_done << " steps in " << fmt_duration(secs) << "; checkpoints in " << dir_
       << "/checkpoints\n";
  return 0;
}

int TrainRun::run() {
  check_options();
  load_config();
  read_init_weights();
  if (writer_ && steps_given_ && c_.resume && cfg_.train.steps != c_.steps && cfg_.train.schedule != "constant")
    out_ << "note: --steps " << c_.steps << " changes the learning-rate schedule: " << cfg_.train.schedule
         << " decay over " << c_.steps << " steps instead of the " << cfg_.train.steps
         << " the run started with, so the steps from here on use other rates than the original run would have\n";
  if (writer_ && steps_given_) cfg_.train.steps = c_.steps;  // the other ranks take rank 0's config
  join_group();
  build_trainer();
  finals_only_ = c_.resume && writer_ && run_->final_evaluations_missing();
  open_session();
  print_start();
  if (run_->trainer().step() >= cfg_.train.steps && !finals_only_) {
    out_ << "already at step " << run_->trainer().step() << " of " << cfg_.train.steps
         << "; pass --steps N to train longer\n";
    return 0;
  }
  prepare_loop();
  TrainOutcome o;
  if (std::optional<int> code = train(o)) return *code;
  return finish(o);
}

}  // namespace

int run_train(const TrainOptions& options, std::ostream& out_main) {
  const TrainOptions c = with_data_flag(options, out_main);
  if (c.nproc < 1 || c.nproc > 1024) throw UsageError("--nproc " + std::to_string(c.nproc) + " must be in 1..1024");
  std::optional<dist::DistOptions> dopt = dist_options(c);
  const torch::Device device = train_device(c, dopt);  // before anything is written or joined
  if (c.nproc > 1) {
    if (dopt)
      throw UsageError("--nproc starts its own ranks: leave out --rank/--world-size and unset WORLD_SIZE/RANK "
                       "(or start each rank yourself without --nproc)");
    return launch_local_ranks(c, out_main);
  }
  TrainRun run(c, std::move(dopt), device, out_main);
  return run.run();
}

namespace {

class TrainCommand : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("train", "train a model on a task (sessions/<task>-<model>.json)");
    c->add_option("--config", o_.config, "training config JSON: {model, task, train}");
    c->add_option("--out", o_.out, "session directory (default SESSIONS/<config name>)");
    c->add_option("--sessions", o_.sessions,
                  "where sessions live when --out is not given (default $MNEMO_SESSIONS, else ~/.local/share/mnemoscope/sessions)");
    o_.o_steps = c->add_option("--steps", o_.steps, "total optimizer steps (overrides train.steps)");
    c->add_option("--hash-stats-every", o_.hash_stats_every,
                  "every N steps (and at the start), bucket statistics of the hashed projections to DIR/hash_stats.csv");
    c->add_flag("--resume", o_.resume, "continue --out from its latest checkpoint");
    c->add_option("--init-from", o_.init_from,
                  "start from these model weights (zoo model, checkpoint, export-weights file or session; the "
                  "optimizer starts fresh): fine-tuning");
    c->add_flag("--init-matching", o_.init_matching,
                "with --init-from: take only the file's tensors whose name and shape are the model's (e.g. a "
                "Transformer-XL's layers into an RMT of the same size); the others start as the seed gives them");
    c->add_option("--set", o_.sets, "override a config field: --set task.segments=4 (repeatable)");
    c->add_flag("--random", o_.random,
                "with --data and no --config: train a Memformer from scratch (sessions/text-memformer.json) instead "
                "of fine-tuning the zoo's text model");
    c->add_option("--data", o_.data,
                  "the corpus of a text task: a text file, a directory of them or a named corpus (sotu, moby-dick, general); "
                  "repeatable; without --config: the zoo's text model fine-tuned on it (sessions/text-finetune.json)");
    c->add_option("--nproc", o_.nproc, "data parallel: start N local ranks (processes) and wait for them");
    c->add_option("--rank", o_.rank, "this process's rank in a distributed job (else RANK)");
    c->add_option("--world-size", o_.world_size, "ranks in the distributed job (else WORLD_SIZE)");
    c->add_option("--master", o_.master, "ADDR:PORT of rank 0's rendezvous store (else MASTER_ADDR:MASTER_PORT, "
                                         "default 127.0.0.1:29500; --nproc picks a free port)");
    c->add_option("--dist-timeout", o_.dist_timeout,
                  "seconds the ranks wait for each other (rendezvous, every collective) before giving up (default 60)");
    c->add_option("--dist-backend", o_.dist_backend, "gloo (CPU, default) or nccl (CUDA builds, with --device cuda)");
    c->add_option("--device", o_.device, "cpu (default) or cuda (the GPU; a distributed rank uses GPU LOCAL_RANK)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    return c;
  }
  int run(std::ostream& out) override { return run_train(o_, out); }

 private:
  TrainOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_train_command() { return std::make_unique<TrainCommand>(); }

}  // namespace mnemo::app
