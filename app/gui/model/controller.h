// What panels may ask of the model side. The Worker implements it on its own thread; tests
// and the gallery use a recorder. Every call returns at once (the UI never waits on the model).
#pragma once
#include "core/models/config.h"

#include <cstdint>
#include <string>

namespace mnemo::app {

class Controller {
 public:
  virtual ~Controller() = default;
  virtual void open_document(const std::string& path) = 0;
  // Rebuilds the model with cfg under seed; checkpoint "" keeps random weights. A checkpoint
  // whose metadata names its model config (export-weights, training) brings that config.
  virtual void apply_model(const ModelConfig& cfg, uint64_t seed, const std::string& checkpoint) = 0;
  // A document and a model at once (a tour stop, a second model): by default the model, then
  // the document; the Worker does both in one command, stepping segments of segment_len
  // tokens (0 = as the checkpoint was trained, core/models/stepping.h).
  virtual void open_document_and_model(const std::string& doc, const ModelConfig& cfg, uint64_t seed,
                                       const std::string& checkpoint, int64_t segment_len) {
    apply_model(cfg, seed, checkpoint);
    open_document(doc);
  }
  virtual void step(int delta) = 0;          // +1 next segment, -1 previous
  virtual void jump(int64_t segment) = 0;    // clamped to the document's segments
  virtual void reset() = 0;                  // back to before the first segment
  virtual void cancel() = 0;                 // stops a running jump and drops queued commands
  // Slot effects of the shown segment (docs/gui.md#slot-effects): the model steps it again with
  // each memory entry removed, off the UI thread; the view then carries PublishedView::
  // slot_effects. A model without memory, or no shown step: nothing. Default: nothing.
  virtual void compute_slot_effects() {}
  // Progress of the command being run: busy() is true while one runs or waits; progress()
  // is in [0,1] for long jumps and negative when there is nothing to measure.
  virtual bool busy() const = 0;
  virtual float progress() const = 0;
};

// Records calls (for tests and the gallery, where nothing must run).
class RecordingController : public Controller {
 public:
  void open_document(const std::string& path) override { last = "open " + path; ++calls; }
  void apply_model(const ModelConfig&, uint64_t seed, const std::string& ckpt) override {
    last = "apply seed " + std::to_string(seed) + (ckpt.empty() ? "" : " checkpoint " + ckpt);
    ++calls;
  }
  void step(int delta) override { last = "step " + std::to_string(delta); ++calls; }
  void jump(int64_t s) override { last = "jump " + std::to_string(s); ++calls; }
  void reset() override { last = "reset"; ++calls; }
  void cancel() override { last = "cancel"; ++calls; }
  void compute_slot_effects() override { last = "slot effects"; ++calls; }
  bool busy() const override { return false; }
  float progress() const override { return -1.f; }
  std::string last;
  int calls = 0;
};

}  // namespace mnemo::app
