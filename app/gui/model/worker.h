// The model side of the desktop app: a thread that owns the Engine (docs/architecture.md#data-flow). The UI
// posts commands (Controller) and reads the latest published PublishedView; neither side
// ever waits for the other beyond a short mutex-protected pointer swap.
#pragma once
#include "app/gui/model/controller.h"
#include "app/view/publisher.h"
#include "app/view/published_view.h"
#include "app/view/trace_keys.h"
#include "core/data/text_stats.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>

namespace mnemo {
class Engine;
}  // namespace mnemo

namespace mnemo::app {

class Worker : public Controller {
 public:
  // on_publish runs on the worker thread after each publication (e.g. to wake the UI loop).
  explicit Worker(std::function<void()> on_publish = {});
  ~Worker() override;  // cancels and joins
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Opens a document and a model on the worker thread (same checks and errors as open/apply).
  // segment_len: tokens per segment to step at; 0 = as the checkpoint was trained
  // (core/models/stepping.h), else the model's segment_len.
  void start(const std::string& doc_path, const ModelConfig& cfg, uint64_t seed, const std::string& checkpoint,
             int64_t segment_len = 0);

  void open_document(const std::string& path) override;
  void open_document_and_model(const std::string& doc, const ModelConfig& cfg, uint64_t seed,
                               const std::string& checkpoint, int64_t segment_len) override {
    start(doc, cfg, seed, checkpoint, segment_len);
  }
  void apply_model(const ModelConfig& cfg, uint64_t seed, const std::string& checkpoint) override;
  void step(int delta) override;
  void jump(int64_t segment) override;
  void reset() override;
  void cancel() override;
  void compute_slot_effects() override;
  bool busy() const override;
  float progress() const override { return progress_.load(); }

  // The latest publication (never null; empty before the first document opens).
  ViewPtr latest() const;
  // Problems since the last call, each a message for a popup ("what, where, how to fix").
  std::vector<std::string> take_errors();
  // Number of commands finished so far (for --steps: wait until N are done).
  int64_t finished() const { return finished_.load(); }

 private:
  struct Open { std::string path; };
  struct Apply { ModelConfig cfg; uint64_t seed; std::string checkpoint; };
  struct Start { std::string path; ModelConfig cfg; uint64_t seed; std::string checkpoint; int64_t segment_len; };
  struct Step { int delta; };
  struct Jump { int64_t segment; };
  struct Reset {};
  struct SlotFx {};
  using Command = std::variant<Open, Apply, Start, Step, Jump, Reset, SlotFx>;

  void post(Command c);
  void run();
  void execute(const Command& c);
  void publish();
  void error(const std::string& message);
  bool install(const std::string& doc_path, const ModelConfig& cfg, uint64_t seed, const std::string& checkpoint,
               const std::shared_ptr<const Document>& reuse_doc, int64_t segment_len);

  std::function<void()> on_publish_;
  mutable std::mutex mu_;               // guards queue_, latest_, errors_
  std::condition_variable cv_;
  std::deque<Command> queue_;
  ViewPtr latest_;
  std::vector<std::string> errors_;
  std::atomic<bool> stop_{false}, cancel_{false}, running_{false};
  std::atomic<float> progress_{-1.f};
  std::atomic<int64_t> finished_{0};

  // Worker-thread state.
  std::unique_ptr<Engine> engine_;
  ViewPublisher publisher_;  // the opened document and model, the shown step, visited segments, provenance
  std::string model_note_;
  // The document checks against the model's training text (ViewSource::doc_warnings).
  std::vector<std::string> document_warnings(const Document& doc, const std::string& checkpoint);
  std::string stats_checkpoint_, stats_error_;
  bool stats_text_model_ = false;
  std::optional<TrainingTextStats> stats_;
  std::thread thread_;  // last: starts after every member above exists
};

// The trace keys (patterns) the worker asks the engine for: gui_trace_keys() (trace_keys.h).

// Checks that the model of `cfg` under `seed` builds and that `checkpoint` ("" = none) loads
// into it, as the worker will do — so `mnemoscope gui` can refuse a bad model before the
// window opens. A checkpoint whose metadata names its config replaces *cfg. Returns the
// one-line description the app shows; throws mnemo::Error subclasses naming the problem.
// *trained_len (when given) receives the segment length the checkpoint was trained at (0:
// unknown or no checkpoint; core/models/stepping.h).
std::string check_gui_model(ModelConfig* cfg, uint64_t seed, const std::string& checkpoint, int64_t* trained_len = nullptr);

}  // namespace mnemo::app
