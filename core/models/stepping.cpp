#include "core/models/stepping.h"

#include "core/errors.h"

namespace mnemo {

std::string Stepping::describe() const {
  std::string s = "segments of " + std::to_string(segment_len) + " tokens";
  if (trained_len == 0) return s;
  if (segment_len == trained_len) return s + ", as trained";
  return s + " (trained on segments of " + std::to_string(trained_len) + ")";
}

std::string Stepping::warning() const {
  if (as_trained()) return "";
  return "the model was trained on segments of " + std::to_string(trained_len) + " tokens and is stepped in segments of " +
         std::to_string(segment_len) + ", a segmentation it never saw: what it shows may not be what it learnt";
}

Stepping choose_stepping(const ModelConfig& model, int64_t trained_len, int64_t requested, const std::string& what) {
  Stepping s;
  s.model_len = model.segment_len;
  s.trained_len = trained_len > 0 ? trained_len : 0;
  if (requested != 0) {
    if (requested < 1 || requested > model.segment_len)
      throw ConfigError(what + " " + std::to_string(requested) + " is out of range 1.." + std::to_string(model.segment_len) +
                        ": the " + model.model + " model takes segments of at most " + std::to_string(model.segment_len) +
                        " tokens (its config's segment_len)");
    s.segment_len = requested;
    s.requested = true;
    return s;
  }
  s.segment_len = (s.trained_len > 0 && s.trained_len <= model.segment_len) ? s.trained_len : model.segment_len;
  return s;
}

}  // namespace mnemo
