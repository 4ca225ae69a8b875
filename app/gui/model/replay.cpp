#include "app/gui/model/replay.h"

#include "core/data/tasks.h"
#include "core/engine/engine.h"
#include "core/io/session.h"
#include "core/train/recorder.h"

#include <algorithm>

namespace mnemo::app {

ReplayController::ReplayController(std::string dir)
    : dir_(std::move(dir)),
      session_(std::make_unique<io::Session>(io::Session::open(dir_, 3, io::SessionAccess::kReadOnly))),  // SessionError naming dir
      probe_(std::make_shared<const ReplayedProbe>()) {
  const auto& m = session_->manifest();
  if (m.contains("config") && m["config"].is_object() && m["config"].contains("model")) {
    try {
      cfg_ = ModelConfig::from_json(m["config"]["model"]);
    } catch (const std::exception&) {
      // An unreadable model config only costs the labels that come from it.
    }
  }
  latest_ = std::make_shared<PublishedView>();
}

ReplayController::~ReplayController() = default;
ReplayController::ReplayController(ReplayController&&) noexcept = default;
ReplayController& ReplayController::operator=(ReplayController&&) noexcept = default;

void ReplayController::reopen(const std::string& dir) {
  ReplayController fresh(dir);
  fresh.publisher_ = std::move(publisher_);  // versions and info ids keep counting up
  fresh.publisher_.open(nullptr);
  *this = std::move(fresh);
  publish();
}

std::vector<std::string> ReplayController::take_errors() {
  std::vector<std::string> e;
  e.swap(errors_);
  return e;
}

bool ReplayController::select_recording(int64_t train_step) {
  if (train_step == step_ && publisher_.info()) return true;
  const std::string path = session_->trace_path(train_step);
  auto p = std::make_shared<ReplayedProbe>();
  try {
    std::map<std::string, std::string> meta;
    io::NamedTensors t = io::load_safetensors(path, &meta);
    *p = read_recording(t, meta, path);
  } catch (const std::exception& e) {
    errors_.push_back(std::string("cannot replay step ") + std::to_string(train_step) + ": " + e.what());
    return false;
  }
  probe_ = std::move(p);
  step_ = train_step;
  auto info = std::make_shared<ViewSource>();
  info->doc = std::make_shared<const Document>(probe_->doc);
  info->cfg = cfg_;
  // The probe is recorded at the training task's segment length: as trained.
  info->stepping.segment_len = info->stepping.trained_len = probe_->segment_len;
  info->stepping.model_len = cfg_.segment_len;
  info->cfg.segment_len = probe_->segment_len;
  info->checkpoint = "recorded at training step " + std::to_string(train_step);
  info->segment_len = probe_->segment_len;
  info->num_segments = static_cast<int64_t>(probe_->segments.size());
  info->line_starts = line_starts_of(probe_->doc);
  info->not_text = probe_->doc.looks_binary();
  // The probe is the training task's test episode 0: the tokens that task scores.
  const auto& m = session_->manifest();
  if (m.contains("config") && m["config"].is_object() && m["config"].contains("task"))
    info->scored_tokens = episode_scored_tokens(m["config"]["task"], probe_->doc.size());
  publisher_.open(std::move(info));
  // Provenance: the recording holds every probe segment from the first, each with the traces
  // a chain reads (recording_trace_spec), so the chain is fed as when stepping live.
  for (const auto& snap : probe_->segments) publisher_.observe(snap->segment, snap->trace);
  const int64_t keep = position_ < 0 ? 0 : std::min<int64_t>(position_, publisher_.info()->num_segments - 1);
  show(keep);
  return true;
}

void ReplayController::open_document(const std::string&) {
  errors_.push_back("replaying " + dir_ + ": the document is the session's recorded probe; start `mnemoscope gui` without --session to open other files");
}

void ReplayController::apply_model(const ModelConfig&, uint64_t, const std::string&) {
  errors_.push_back("replaying " + dir_ + ": the maps are recorded traces; there is no model to change (start `mnemoscope gui --checkpoint` on a checkpoint of the session to run it)");
}

void ReplayController::step(int delta) {
  if (!publisher_.info()) return;
  const int64_t n = publisher_.info()->num_segments;
  const int64_t to = std::clamp<int64_t>(position_ + delta, 0, n - 1);
  if (to != position_) show(to);
}

void ReplayController::jump(int64_t segment) {
  if (!publisher_.info()) return;
  show(std::clamp<int64_t>(segment, 0, publisher_.info()->num_segments - 1));
}

void ReplayController::reset() {
  position_ = -1;
  publisher_.clear_shown(false);
  publish();
}

void ReplayController::show(int64_t segment) {
  if (!publisher_.info() || segment < 0 || segment >= static_cast<int64_t>(probe_->segments.size())) return;
  publisher_.show(*probe_->segments[static_cast<size_t>(segment)]);
  position_ = segment;
  publish();
}

void ReplayController::publish() {
  latest_ = publisher_.view(position_, "replay of " + dir_ + (step_ >= 0 ? " at training step " + std::to_string(step_) : ""),
                            dir_);
}

}  // namespace mnemo::app
