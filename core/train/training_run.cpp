#include "core/train/training_run.h"

#include "core/dist/process_group.h"
#include "core/platform/memory.h"
#include "core/train/hash_probe.h"
#include "core/train/memory_stats.h"
#include "core/train/recorder.h"
#include "core/train/run_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace mnemo {

TrainingRun::TrainingRun(std::string dir, bool writer, TrainingRunObserver& observer)
    : dir_(std::move(dir)), writer_(writer), obs_(observer) {}

TrainingRun::~TrainingRun() = default;

void TrainingRun::open_existing() {
  // Locked before Session::open removes stale temp files: a writer still running owns them.
  struct stat st {};
  if (::stat(dir_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) lock_ = std::make_unique<io::SessionWriteLock>(dir_);
  session_ = io::Session::open(dir_);
  resume_from_ = session_->load_latest();
}

void TrainingRun::build(const TrainingConfig& cfg, torch::Device device) {
  cfg_ = cfg;
  trainer_.emplace(cfg_, device);
  trainer_->check_trainable();
}

void TrainingRun::check_probe_example() const {
  if (cfg_.train.record_every > 0) mnemo::check_probe_example(trainer_->task(), cfg_.train.record_example);
}

void TrainingRun::set_process_group(dist::ProcessGroup* pg) {
  pg_ = pg;
  if (pg_) trainer_->set_process_group(pg_);
  world_ = pg_ ? pg_->world_size() : 1;
}

const std::optional<MatchedWeights>& TrainingRun::init_from(WeightsFile w, bool matching, const std::string& config_path,
                                                            const std::string& misfit_fix) {
  init_ = std::move(w);
  if (matching)
    matched_ = load_matching_weights(*trainer_->model(), init_->weights, init_->path);
  else
    load_weights_checked(*trainer_->model(), cfg_.model, *init_, config_path, misfit_fix);
  return matched_;
}

bool TrainingRun::model_has_dropout() const {
  for (const auto& sub : trainer_->model()->modules())
    if (const auto* d = dynamic_cast<const torch::nn::DropoutImpl*>(sub.get()); d && d->options.p() > 0) return true;
  return false;
}

void TrainingRun::restore_resume_point() {
  if (!resume_from_) return;
  Checkpoint ck;
  ck.tensors = resume_from_->tensors;
  ck.metadata = resume_from_->metadata;
  trainer_->restore(ck, resume_from_->path);
}

void TrainingRun::sync() {
  try {
    trainer_->sync_from_rank0();
  } catch (const dist::PeerError& e) {
    throw dist::RendezvousError(e.what());  // nothing written yet
  }
}

bool TrainingRun::final_evaluations_missing() const {
  const Trainer& trainer = *trainer_;
  if (!(writer_ && session_ && trainer.step() >= cfg_.train.steps)) return false;
  const RunLog log = parse_run_log(session_->read_metrics());
  const size_t expected = 2 * ((cfg_.train.eval_zero_memory && trainer.has_memory()) ? 2 : 1);
  const auto have = std::count_if(log.evals.begin(), log.evals.end(), [&](const nlohmann::json& e) {
    return e.value("final", false) && e.value("step", int64_t{-1}) == trainer.step();
  });
  return static_cast<size_t>(have) < expected;
}

void TrainingRun::create_session(const std::string& config_path) {
  nlohmann::json manifest = {{"kind", "train"}, {"config", cfg_.to_json()}, {"config_path", config_path}};
  if (init_) manifest["init_from"] = {{"path", init_->path}, {"kind", init_->kind}, {"step", init_->step}};
  if (matched_)
    manifest["init_from"].update({{"matching", true}, {"fresh", matched_->fresh}, {"unused", matched_->unused}});
  if (world_ > 1) manifest["world_size"] = world_;
  session_ = io::Session::create(dir_, manifest);
  lock_ = std::make_unique<io::SessionWriteLock>(dir_);
}

std::string TrainingRun::repair_log() { return session_->repair_metrics_log(); }

void TrainingRun::append_resume_record() {
  session_->append_metrics(resume_record(trainer_->step(), resume_from_ ? resume_from_->path : "", world_), true);
}

// Probe recordings (core/train/recorder.h): test example train.record_example, every record_every steps.
void TrainingRun::make_probe() {
  if (cfg_.train.record_every <= 0 || !writer_) return;
  try {
    probe_ = probe_document(trainer_->task(), cfg_.train.record_segments, cfg_.train.record_example);
    probe_scored_ = episode_scored_tokens(trainer_->task(), probe_->size());
  } catch (const std::exception& e) {
    obs_.on_notice(std::string("warning: no probe recordings: ") + e.what());
    probe_.reset();
  }
}

void TrainingRun::record(int64_t step) {
  if (!probe_ || step == last_recorded_) return;
  last_recorded_ = step;
  try {
    record_into_session(*session_, trainer_->model(), *probe_, trainer_->task().segment_len(), step,
                        recording_trace_spec(), probe_scored_);
  } catch (const io::SessionError&) {
    throw;
  } catch (const IoError&) {
    throw;
  } catch (const std::exception& e) {
    obs_.on_notice("warning: probe recording at step " + std::to_string(step) + " failed and is switched off: " +
                   e.what());
    probe_.reset();
  }
}

void TrainingRun::record_hash_stats(int64_t step) {
  Trainer& trainer = *trainer_;
  if (!probe_batch_) {
    std::vector<int64_t> idx(static_cast<size_t>(std::min(cfg_.train.batch, trainer.task().split_size(Split::kValid))));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
    probe_batch_ = trainer.task().batch(Split::kValid, idx, trainer.model()->device());
  }
  const HashStatsAccumulator acc = probe_hash_counts(*trainer.model(), *probe_batch_);
  const std::string path = hash_stats_path();
  const bool fresh = ::access(path.c_str(), F_OK) != 0;
  std::ofstream f(path, std::ios::app);
  if (fresh) f << kHashStatsCsvHeader << "\n";
  f << hash_stats_csv_rows(step, acc);
}

bool TrainingRun::start_hash_stats(int64_t every) {
  if (every <= 0 || !writer_) return true;
  Trainer& trainer = *trainer_;
  // A model without a hashed projection has no statistics: nothing is written (no CSV of its
  // header alone), and the caller says so.
  if (probe_hash_counts(*trainer.model(), trainer.task().batch(Split::kValid, {0}, trainer.model()->device())).empty())
    return false;
  hash_stats_every_ = every;
  if (trainer.step() == 0) record_hash_stats(0);
  return true;
}

std::string TrainingRun::activity_name(int64_t step) const {
  return "training step " + std::to_string(step) + " (batch " + std::to_string(cfg_.train.batch) + " x " +
         std::to_string(trainer_->segments()) + " segments of " + std::to_string(trainer_->task().segment_len()) +
         " tokens)";
}

// A checkpoint that cannot be written (a full disk, a folder made read-only, a file in the way)
// stops the run as out of memory does: an `error` record in metrics.log (when it can still be
// written), and a message naming the cause, the checkpoint that is kept and how to go on.
// Nothing saved before is touched (Session::save_checkpoint).
std::string TrainingRun::save(int64_t step) {
  Checkpoint ck = trainer_->checkpoint();
  std::string path;
  try {
    path = session_->save_checkpoint(step, ck.tensors, ck.metadata);
  } catch (const Error& e) {
    // The checkpoint itself may be complete when only `latest` failed: resume takes the newest.
    const auto steps = session_->checkpoint_steps();
    const std::string kept = steps.empty() ? "no checkpoint was saved before, so a resume starts again from step 0"
                                           : "the last checkpoint (step " + std::to_string(steps.back()) + ") is kept";
    const std::string what = "cannot save the checkpoint of step " + std::to_string(step) + ": " + e.what();
    try {
      session_->append_metrics(error_record(step, what, world_), true);
    } catch (const std::exception&) {
      // A full disk may refuse the record too; the message still goes out below.
    }
    throw IoError(what + "; " + kept + ": free space on that disk, or make " + dir_ +
                  "/checkpoints a writable folder, then continue with `" + continue_hint_ + "`");
  }
  last_saved_ = step;
  return path;
}

// The step record, hash statistics and probe recordings when due, a checkpoint when asked for.
void TrainingRun::on_step(const StepMetrics& m, std::atomic<bool>* checkpoint_now) {
  if (writer_) {
    if (pg_) pg_->set_phase(m.step, "metrics and recordings of rank 0");
    if (hash_stats_every_ > 0 && !m.non_finite && m.step % hash_stats_every_ == 0) record_hash_stats(m.step);
    const HostMemory mem = host_memory();
    session_->append_metrics(step_record(m, static_cast<double>(mem.peak_rss_bytes) / (1024.0 * 1024.0)));
    if (!m.non_finite && cfg_.train.record_every > 0 && m.step % cfg_.train.record_every == 0) record(m.step);
    if (!m.non_finite && checkpoint_now && checkpoint_now->exchange(false))
      obs_.on_save(m.step, save(m.step), SaveReason::kRequested);
    obs_.on_step(m);
  }
  activity_->rename(activity_name(m.step + 1));
}

// Evaluations are shared by the ranks (every rank gets the whole result; the curriculum
// moves everywhere at once); rank 0 records.
void TrainingRun::on_eval(const EvalMetrics& e) {
  if (!writer_) return;
  obs_.on_eval(e);
  session_->append_metrics(eval_record(e, world_));
}

void TrainingRun::on_curriculum(const CurriculumChange& ch) {
  if (!writer_) return;
  obs_.on_curriculum(ch);
  session_->append_metrics(curriculum_record(ch, world_));
  make_probe();  // the probe document follows the task's new segmentation
  probe_batch_.reset();
}

void TrainingRun::on_save(int64_t step) {
  if (!writer_) return;
  if (pg_) pg_->set_phase(step, "checkpoint of rank 0");
  obs_.on_save(step, save(step), SaveReason::kScheduled);
}

void TrainingRun::prepare() {
  last_saved_ = trainer_->step();
  make_probe();
  activity_ = std::make_unique<platform::MemoryActivity>("training step " + std::to_string(trainer_->step() + 1));
  activity_->rename(activity_name(trainer_->step() + 1));
}

TrainOutcome TrainingRun::train(const std::atomic<bool>* stop, std::atomic<bool>* checkpoint_now) {
  TrainCallbacks cb;
  cb.on_step = [this, checkpoint_now](const StepMetrics& m) { on_step(m, checkpoint_now); };
  cb.on_eval = [this](const EvalMetrics& e) { on_eval(e); };
  cb.on_curriculum = [this](const CurriculumChange& ch) { on_curriculum(ch); };
  cb.on_save = [this](int64_t step) { on_save(step); };
  if (trainer_->step() == 0) record(0);
  return trainer_->run(cb, stop);
}

void TrainingRun::leave_group() {
  trainer_->set_process_group(nullptr);
  pg_ = nullptr;
}

void TrainingRun::append_error(int64_t step, const std::string& message, bool sync) {
  session_->append_metrics(error_record(step, message, world_), sync);
}

std::optional<std::string> TrainingRun::save_if_unsaved() {
  if (trainer_->step() <= last_saved_) return std::nullopt;
  std::string path = save(trainer_->step());
  obs_.on_save(trainer_->step(), path, SaveReason::kEnd);
  return path;
}

void TrainingRun::record_final_probe() {
  if (cfg_.train.record_every > 0) record(trainer_->step());
}

void TrainingRun::final_evaluations() {
  for (Split s : {Split::kValid, Split::kTest})
    for (bool zero : {false, true}) {
      if (zero && !(cfg_.train.eval_zero_memory && trainer_->has_memory())) continue;
      EvalOptions eo;
      eo.zero_memory = zero;
      EvalMetrics e = trainer_->evaluate(s, eo);
      obs_.on_final_eval(e);
      session_->append_metrics(final_eval_record(e, world_));
    }
}

}  // namespace mnemo
