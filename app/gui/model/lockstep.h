// Two models stepped in lockstep through the same document (docs/gui.md#side-by-side): every
// stepping command goes to both controllers, so both sides always show the same segment.
// Opening a document opens it on both; applying a model changes side A only (side B keeps
// the model it was given). Torch-free; the two controllers are owned elsewhere.
#pragma once
#include "app/gui/model/controller.h"

namespace mnemo::app {

class LockstepController : public Controller {
 public:
  LockstepController(Controller* a, Controller* b) : a_(a), b_(b) {}
  void open_document(const std::string& path) override {
    a_->open_document(path);
    if (b_) b_->open_document(path);
  }
  void apply_model(const ModelConfig& cfg, uint64_t seed, const std::string& checkpoint) override {
    a_->apply_model(cfg, seed, checkpoint);
  }
  void open_document_and_model(const std::string& doc, const ModelConfig& cfg, uint64_t seed,
                               const std::string& checkpoint, int64_t segment_len) override {
    a_->open_document_and_model(doc, cfg, seed, checkpoint, segment_len);
    if (b_) b_->open_document(doc);
  }
  void step(int delta) override {
    a_->step(delta);
    if (b_) b_->step(delta);
  }
  void jump(int64_t segment) override {
    a_->jump(segment);
    if (b_) b_->jump(segment);
  }
  void reset() override {
    a_->reset();
    if (b_) b_->reset();
  }
  void cancel() override {
    a_->cancel();
    if (b_) b_->cancel();
  }
  // Side A's (the Document panel's "compute slot effects", the Slot effects panel, a tour stop
  // with the slot-effect tint); side B's panels draw read-only.
  void compute_slot_effects() override { a_->compute_slot_effects(); }
  bool busy() const override { return a_->busy() || (b_ && b_->busy()); }
  float progress() const override {
    const float pa = a_->progress(), pb = b_ ? b_->progress() : -1.f;
    if (pa < 0.f) return pb;
    if (pb < 0.f) return pa;
    return 0.5f * (pa + pb);
  }
  void set_b(Controller* b) { b_ = b; }
  Controller* b() const { return b_; }

 private:
  Controller* a_;
  Controller* b_;
};

}  // namespace mnemo::app
