// Replaying a recorded training session (docs/gui.md#training-dashboard-and-replay): the probe recordings of a session
// (core/train/recorder.h, traces/step-N.safetensors) shown through the same panels as a
// live model, with no model, no LibTorch compute and no GPU. ReplayController implements
// Controller over the segments of one recording; select_recording() picks which training
// step's recording is shown. Everything runs on the calling (UI) thread: a recording is a
// small file (a probe of at most 64 segments), read in milliseconds.
#pragma once
#include "app/gui/model/controller.h"
#include "app/view/publisher.h"
#include "app/view/published_view.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mnemo {
struct ReplayedProbe;
namespace io {
class Session;
}
}  // namespace mnemo

namespace mnemo::app {

class ReplayController : public Controller {
 public:
  // dir: a session directory (opened read-only; it may still be written by `train`).
  // Throws std::runtime_error naming the directory when it is not a session.
  explicit ReplayController(std::string dir);
  ~ReplayController() override;
  ReplayController(ReplayController&&) noexcept;
  ReplayController& operator=(ReplayController&&) noexcept;
  // Switches to another session (the dashboard started a new run); as the constructor.
  void reopen(const std::string& dir);

  // Loads traces/step-N and shows the same probe segment as before (or segment 0). Returns
  // false and queues an error when the file cannot be read; the previous recording stays.
  bool select_recording(int64_t train_step);
  int64_t recording_step() const { return step_; }
  const std::string& dir() const { return dir_; }
  const ModelConfig& model_config() const { return cfg_; }

  // The latest publication (never null).
  ViewPtr latest() const { return latest_; }
  std::vector<std::string> take_errors();

  // Controller: stepping moves through the probe's segments; there is no model to change.
  void open_document(const std::string& path) override;
  void apply_model(const ModelConfig& cfg, uint64_t seed, const std::string& checkpoint) override;
  void step(int delta) override;
  void jump(int64_t segment) override;
  void reset() override;
  void cancel() override {}
  bool busy() const override { return false; }
  float progress() const override { return -1.f; }

 private:
  void show(int64_t segment);
  void publish();

  std::string dir_;
  std::unique_ptr<io::Session> session_;  // read-only
  ModelConfig cfg_;
  int64_t step_ = -1;
  std::shared_ptr<const ReplayedProbe> probe_;
  ViewPublisher publisher_;  // the recording as a document and model, the shown segment, visited ones, provenance
  int64_t position_ = -1;
  ViewPtr latest_;
  std::vector<std::string> errors_;
};

}  // namespace mnemo::app
