#include "app/gui/model/entry_effect.h"

#include "core/data/document.h"
#include "core/engine/doc_score.h"
#include "core/models/factory.h"
#include "core/models/memory_entries.h"
#include "core/train/checkpoint.h"

#include <cmath>
#include <stdexcept>

namespace mnemo::app {

std::vector<double> entry_effect_apart(const TourStop& stop, const TourCheck& c) {
  ModelConfig cfg = stop.cfg;
  MemoryModel model = make_model(cfg, 0);
  load_weights_checked(*model, cfg, read_weights_file(stop.checkpoint), "the tour stop's model");
  const Document doc = load_document(stop.document);
  const int64_t L = stop.segment_len;
  const MemoryState initial = model->initial_memory(1);
  const MemoryEntries entries = memory_entries(model->capabilities(), initial, L);
  if (c.slot < 0 || c.slot >= entries.count())
    throw std::out_of_range("no memory entry " + std::to_string(c.slot) + " (" + std::to_string(entries.count()) +
                            " entries)");
  const DocumentLosses carried = score_document(*model, doc, L, MemoryAblation::kCarried);
  DocumentLosses removed = carried;
  if (stop.segment > 0) {
    const MemoryState before = document_memory_after(*model, doc, L, stop.segment - 1);
    const MemoryState patch = ablate_entries(before, initial, entries, {c.slot},
                                             c.of == "zeroed" ? MemoryAblation::kZeroed : MemoryAblation::kReset);
    removed = score_document_patched(*model, doc, L, patch, stop.segment);
  }
  std::vector<double> out;
  for (int64_t t = c.token_from; t < c.token_to; ++t) {
    const auto k = static_cast<size_t>(t);
    const double a = k < carried.loss.size() ? carried.loss[k] : NAN;
    const double b = k < removed.loss.size() ? removed.loss[k] : NAN;
    out.push_back((b - a) / std::log(2.0));
  }
  return out;
}

}  // namespace mnemo::app
