// The one path from a model step to what is drawn (docs/architecture.md#data-flow): every
// producer of the published view — live stepping (Worker), replay (ReplayController), the
// gallery's synthetic traces (make_synthetic_view) — and every command that draws a step
// (`step`, `export`, `mtn-qa`) turns a Snapshot into StepData here and nowhere else.
//
//  * publish_step: one step's plain arrays (app/figures/extract.h make_step_data, labelled by
//    the model kind, which is required), the provenance of every memory entry after it (a
//    provenance chain's state; MTN: its kept entries' source tokens) and the record kept of
//    it (SegmentRecord: self mass, token losses, provenance).
//  * ViewPublisher: what a producer publishes between steps — the opened document and model
//    (ViewSource), the shown step, the visited segments and the provenance chain fed by every
//    step of the model — assembled into one immutable PublishedView.
// Compiled in every build (the commands use publish_step); the header needs no LibTorch.
#pragma once
#include "app/view/published_view.h"

#include <memory>
#include <string>
#include <vector>

namespace mnemo {
struct Snapshot;
struct Trace;
class ProvenanceChain;
}  // namespace mnemo

namespace mnemo::app {

// One step as the panels and the figure writers take it.
struct PublishedStep {
  std::shared_ptr<const StepData> step;
  ProvenanceStatePtr provenance;  // after the step; null when the model has none (or no chain was fed)
  ProvenanceStatePtr provenance_before;  // after the previous step (what the step read); null likewise or at 0
  std::shared_ptr<const SegmentRecord> record;
  std::shared_ptr<const SlotEffects> slot_effects;  // of this step, once computed
};

// The step of `snap` of a model of kind `model_kind` ("memformer", "rmt", "rmt-write-only", ...:
// the labels and which tokens lm.loss predicts depend on it) over `doc`. `chain`: the provenance
// chain fed with every step up to this one (null: none; an MTN step's provenance comes from its trace).
PublishedStep publish_step(const Snapshot& snap, const Document& doc, const std::string& model_kind,
                           ProvenanceChain* chain = nullptr);

class ViewPublisher {
 public:
  ViewPublisher();
  ~ViewPublisher();
  ViewPublisher(ViewPublisher&&) noexcept;
  ViewPublisher& operator=(ViewPublisher&&) noexcept;

  // A new document or model (null: none): forgets the shown step, the visited segments and the
  // provenance chain. `info` without an id (0) gets the next one. With `chain`, a model kind
  // that has a provenance chain (core/trace/provenance_trace.h) gets a new one, fed by
  // observe(); the provenance note says why a model has none.
  void open(std::shared_ptr<ViewSource> info, bool chain = true);
  const std::shared_ptr<const ViewSource>& info() const { return info_; }

  // Provenance: the trace keys observe() needs at every step (empty without a chain), and one
  // step of the model, in order, traced or not (an engine's step observer; a recording's
  // segments). A step the chain cannot read sets the provenance note instead of throwing.
  std::vector<std::string> observed_keys() const;
  void observe(int64_t segment, const Trace& trace);

  // The shown step becomes `snap` (publish_step with the chain) and is remembered as visited.
  const PublishedStep& show(const Snapshot& snap);
  // Remembers `record` for `segment` (replacing what show() kept) / sets the provenance
  // published with the shown step — for producers that make these up (the gallery).
  void remember(int64_t segment, std::shared_ptr<const SegmentRecord> record);
  void set_provenance(ProvenanceStatePtr provenance) { shown_.provenance = std::move(provenance); }
  // The shown step's slot effects (kept until another step is shown).
  void set_slot_effects(std::shared_ptr<const SlotEffects> fx) { shown_.slot_effects = std::move(fx); }
  // No step shown (and, with `forget_visited`, no segment visited); the chain stays.
  void clear_shown(bool forget_visited);
  const StepData* shown() const { return shown_.step.get(); }

  // The published view: the shown step at `position` (-1 when none is shown).
  ViewPtr view(int64_t position, const std::string& model_note, const std::string& session_dir = "");

 private:
  std::shared_ptr<const ViewSource> info_;
  std::unique_ptr<ProvenanceChain> chain_;
  std::string provenance_note_;
  PublishedStep shown_;
  VisitedSegments visited_;
  uint64_t version_ = 0, visited_version_ = 0, next_info_id_ = 1;
};

}  // namespace mnemo::app
