#include "app/gui/model/worker.h"
#include "app/figures/extract.h"
#include "core/engine/doc_score.h"
#include "core/models/memory_entries.h"

#include "core/data/tasks.h"
#include "core/engine/engine.h"

#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "core/platform/memory.h"
#include "core/trace/keys.h"
#include "core/trace/hash_stats.h"
#include "core/train/checkpoint.h"
#include "core/train/zoo.h"

#include <algorithm>
#include <optional>

namespace mnemo::app {

namespace {
constexpr const char* kOomHint = "; choose a smaller segment length or model, or free memory";
MemoryModel build_gui_model(ModelConfig* cfg, uint64_t seed, const std::string& checkpoint, std::string* note,
                            int64_t* trained_len, nlohmann::json* trained_task = nullptr) {
  std::optional<WeightsFile> file;
  *trained_len = 0;
  if (!checkpoint.empty()) {
    // Any weights file: its own config (training checkpoint, zoo model, export-weights) wins.
    file = read_weights_file(checkpoint);
    if (file->has_model_config()) *cfg = ModelConfig::from_json(file->model_config);
    *trained_len = trained_segment_len(*file);
    if (trained_task && file->training_config.is_object() && file->training_config.contains("task"))
      *trained_task = file->training_config["task"];
  }
  if (cfg->heads > 0 && cfg->dim % cfg->heads != 0)
    throw ConfigError("heads: dim " + std::to_string(cfg->dim) + " must be divisible by heads " +
                      std::to_string(cfg->heads) + "; change dim or heads");
  cfg->validate();
  MemoryModel m = make_model(*cfg, seed);
  if (file) {
    load_weights_checked(*m, *cfg, *file, "the flags");
    // Stepped with the head it was trained with: an mtn-qa model tags answer bytes (its
    // language-model head was never trained) and traces qa.answer_prob (docs/gui.md#mtn-qa).
    if (m->capabilities().mtn_family && file->training_config.is_object() && file->training_config.contains("task"))
      m->set_task_head(trained_task_head(file->training_config["task"]));
    *note = cfg->model + ", weights from " + checkpoint;
  } else {
    *note = cfg->model + ", randomly initialised (seed " + std::to_string(seed) + ")";
  }
  return m;
}
}  // namespace

std::string check_gui_model(ModelConfig* cfg, uint64_t seed, const std::string& checkpoint, int64_t* trained_len) {
  std::string note;
  int64_t trained = 0;
  build_gui_model(cfg, seed, checkpoint, &note, &trained);
  if (trained_len) *trained_len = trained;
  return note;
}

Worker::Worker(std::function<void()> on_publish) : on_publish_(std::move(on_publish)) {
  latest_ = std::make_shared<PublishedView>();
  thread_ = std::thread([this] { run(); });
}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cancel_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Worker::post(Command c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(c));
  }
  cv_.notify_all();
}

void Worker::start(const std::string& doc_path, const ModelConfig& cfg, uint64_t seed, const std::string& checkpoint,
                   int64_t segment_len) {
  post(Start{doc_path, cfg, seed, checkpoint, segment_len});
}
void Worker::open_document(const std::string& path) { post(Open{path}); }
void Worker::apply_model(const ModelConfig& cfg, uint64_t seed, const std::string& checkpoint) {
  post(Apply{cfg, seed, checkpoint});
}
void Worker::step(int delta) { post(Step{delta}); }
void Worker::jump(int64_t segment) { post(Jump{segment}); }
void Worker::reset() { post(Reset{}); }
void Worker::compute_slot_effects() { post(SlotFx{}); }

void Worker::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
  cancel_ = true;
}

bool Worker::busy() const {
  if (running_.load()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return !queue_.empty();
}

ViewPtr Worker::latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

std::vector<std::string> Worker::take_errors() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.swap(errors_);
  return out;
}

void Worker::error(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  errors_.push_back(message);
}

void Worker::run() {
  for (;;) {
    Command c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_.load() || !queue_.empty(); });
      if (stop_) return;
      c = std::move(queue_.front());
      queue_.pop_front();
      // A jump followed by another jump is superseded (dragging the slider posts many).
      while (std::holds_alternative<Jump>(c) && !queue_.empty() && std::holds_alternative<Jump>(queue_.front())) {
        c = std::move(queue_.front());
        queue_.pop_front();
        ++finished_;
      }
      cancel_ = false;
      running_ = true;
    }
    progress_ = -1.f;
    try {
      execute(c);
    } catch (const std::exception& e) {
      // Anything the checks below did not anticipate still leaves the app running.
      if (auto oom = platform::out_of_memory_message(e)) error(*oom + kOomHint);
      else error(std::string("unexpected problem: ") + e.what());
    }
    progress_ = -1.f;
    // Published before the job counts as finished: whoever waits for finished() (the tests,
    // a scripted run) then sees its result in latest(), not the one before.
    publish();
    running_ = false;
    ++finished_;
  }
}

bool Worker::install(const std::string& doc_path, const ModelConfig& cfg_in, uint64_t seed,
                     const std::string& checkpoint, const std::shared_ptr<const Document>& reuse_doc,
                     int64_t segment_len) {
  std::shared_ptr<const Document> doc = reuse_doc;
  if (!doc) {
    try {
      doc = std::make_shared<const Document>(load_document(doc_path));
    } catch (const DocumentError& e) {
      error(std::string("Cannot open the document: ") + e.what());
      return false;
    }
  }
  ModelConfig cfg = cfg_in;
  std::string note;
  MemoryModel model;
  Stepping stepping;
  nlohmann::json task;
  try {
    int64_t trained = 0;
    model = build_gui_model(&cfg, seed, checkpoint, &note, &trained, &task);
    // As the checkpoint was trained unless a segment length was asked for.
    stepping = choose_stepping(cfg, trained, segment_len);
  } catch (const io::SafetensorsError& e) {
    error(std::string("Cannot load the checkpoint: ") + e.what());
    return false;
  } catch (const ConfigError& e) {
    error(std::string(checkpoint.empty() ? "Invalid model config: " : "The checkpoint does not fit: ") + e.what());
    return false;
  } catch (const std::exception& e) {
    if (auto oom = platform::out_of_memory_message(e, "building the model")) error(*oom + kOomHint);
    else error(std::string("Cannot build the model: ") + e.what());
    return false;
  }
  std::unique_ptr<Engine> engine;
  try {
    engine = std::make_unique<Engine>(model, doc, stepping.segment_len, TraceSpec::of(gui_trace_keys()));  // shared, not copied
  } catch (const std::exception& e) {
    if (auto oom = platform::out_of_memory_message(e, "opening the document")) error(*oom + kOomHint);
    else error(std::string("Cannot step this document: ") + e.what());
    return false;
  }
  // Each token's loss with the memory reset and zeroed too: the Document panel's memory
  // benefit tint and tooltip, and File > Export's memory_benefit figure (docs/gui.md).
  engine->set_memory_benefit(true);
  engine->progress = [this](int64_t done, int64_t total) {
    progress_ = total > 0 ? static_cast<float>(done) / static_cast<float>(total) : -1.f;
    return !cancel_.load() && !stop_.load();
  };
  auto info = std::make_shared<ViewSource>();
  const auto& prev = publisher_.info();
  info->doc = doc;
  info->cfg = cfg;
  info->seed = seed;
  info->checkpoint = checkpoint;
  info->random_weights = checkpoint.empty();
  info->segment_len = stepping.segment_len;
  info->stepping = stepping;
  info->num_segments = engine->num_segments();
  info->line_starts = (prev && prev->doc == doc) ? prev->line_starts : line_starts_of(*doc);
  info->not_text = (prev && prev->doc == doc) ? prev->not_text : doc->looks_binary();
  info->doc_warnings = document_warnings(*doc, checkpoint);
  if (task.is_object()) info->trained_task = task.value("name", std::string());
  // Stepped as trained, a synthetic task's episode: the tokens its task scores (Controls).
  if (stepping.as_trained()) info->scored_tokens = episode_scored_tokens(task, doc->size());
  publisher_.open(std::move(info));
  // Provenance needs every step, also the ones a jump computes untraced: the engine hands
  // their writer / attention traces to the publisher's chain (docs/models.md#provenance).
  if (auto keys = publisher_.observed_keys(); !keys.empty())
    engine->set_step_observer(std::move(keys), [this](int64_t i, const Trace& tr) { publisher_.observe(i, tr); });
  engine_ = std::move(engine);
  model_note_ = note;
  return true;
}

std::vector<std::string> Worker::document_warnings(const Document& doc, const std::string& checkpoint) {
  // The statistics of the model's training text, read once per checkpoint (a random model has
  // none: it saw nothing, and the banner would only say that).
  if (checkpoint.empty()) return {};
  if (checkpoint != stats_checkpoint_) {
    stats_checkpoint_ = checkpoint;
    stats_.reset();
    stats_error_.clear();
    stats_text_model_ = false;
    try {
      stats_text_model_ = trained_on_text_file(checkpoint);  // a synthetic task's model reads episodes
      if (stats_text_model_) stats_ = training_text_stats_of_file(checkpoint);
    } catch (const std::exception& e) {
      stats_error_ = e.what();
    }
  }
  if (!stats_text_model_) return {};
  std::vector<std::string> out = check_document(doc, stats_ ? &*stats_ : nullptr).warnings();
  if (!stats_error_.empty()) out.push_back(stats_error_);
  return out;
}

void Worker::execute(const Command& c) {
  if (auto* s = std::get_if<Start>(&c)) {
    install(s->path, s->cfg, s->seed, s->checkpoint, nullptr, s->segment_len);
    return;
  }
  const std::shared_ptr<const ViewSource> cur = publisher_.info();  // kept alive while install replaces it
  if (auto* o = std::get_if<Open>(&c)) {
    if (!cur) {
      error("Cannot open '" + o->path + "': no model is set up yet");
      return;
    }
    // Another document, cut as the one before (a length asked for stays asked for).
    install(o->path, cur->cfg, cur->seed, cur->checkpoint, nullptr, cur->stepping.requested ? cur->stepping.segment_len : 0);
    return;
  }
  if (auto* a = std::get_if<Apply>(&c)) {
    if (!cur) {
      error("Open a document before applying a model config");
      return;
    }
    install(cur->doc->path, a->cfg, a->seed, a->checkpoint, cur->doc, 0);
    return;
  }
  if (!engine_) return;
  if (std::holds_alternative<Reset>(c)) {
    engine_->reset();
    publisher_.clear_shown(true);
    return;
  }
  if (std::holds_alternative<SlotFx>(c)) {
    // The shown segment again with each memory entry removed (core/engine/doc_score.h), on
    // this thread; cancel() stops it between entries.
    const int64_t i = engine_->position();
    if (i < 0 || !publisher_.shown() || engine_->memory_before(0).empty()) return;
    MemoryModelImpl& model = *engine_->model();
    const MemoryEntries entries = memory_entries(model.capabilities(), engine_->memory_before(0), cur->segment_len);
    const int64_t n = entries.count();
    int64_t done = 0;
    try {
      const SegmentEntryEffects fx = segment_entry_effects(
          model, engine_->document(), cur->segment_len, i, engine_->memory_before(i), engine_->memory_before(0), entries,
          {MemoryAblation::kReset, MemoryAblation::kZeroed}, [&] {
            progress_ = n > 0 ? static_cast<float>(done++) / static_cast<float>(2 * n) : -1.f;
            return !cancel_.load();
          });
      if (fx.ablations.empty()) return;  // cancelled
      publisher_.set_slot_effects(std::make_shared<const SlotEffects>(slot_effects_data(fx, entries)));
    } catch (const std::exception& e) {
      if (auto oom = platform::out_of_memory_message(e)) error(*oom + kOomHint);
      else error("Cannot compute the slot effects of segment " + std::to_string(i) + ": " + e.what());
    }
    return;
  }
  int64_t target = engine_->position();
  if (auto* s = std::get_if<Step>(&c)) target += s->delta;
  if (auto* j = std::get_if<Jump>(&c)) target = j->segment;
  target = std::max<int64_t>(0, std::min<int64_t>(target, engine_->num_segments() - 1));
  if (target == engine_->position() && publisher_.shown()) return;
  SnapshotPtr snap;
  try {
    platform::MemoryActivity activity("segment " + std::to_string(target) + " (" + cur->cfg.model + ", " +
                                      std::to_string(cur->segment_len) + " tokens per segment)");
    snap = engine_->jump(target);
  } catch (const std::exception& e) {
    if (auto oom = platform::out_of_memory_message(e)) error(*oom + kOomHint);
    else error("Cannot compute segment " + std::to_string(target) + ": " + e.what());
    return;
  }
  if (!snap) return;  // cancelled; the kept states computed so far stay
  publisher_.show(*snap);
}

void Worker::publish() {
  ViewPtr v = publisher_.view(engine_ ? engine_->position() : -1, model_note_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    latest_ = v;
  }
  if (on_publish_) on_publish_();
}

}  // namespace mnemo::app
