#include "app/view/publisher.h"

#include "app/figures/extract.h"
#include "core/engine/engine.h"
#include "core/models/capabilities.h"
#include "core/trace/provenance_trace.h"

#include <algorithm>

namespace mnemo::app {

namespace {
constexpr int kProvenanceTopK = 5;  // sources kept per slot in each visited record (the timeline's list)
}

PublishedStep publish_step(const Snapshot& snap, const Document& doc, const std::string& model_kind,
                           ProvenanceChain* chain) {
  PublishedStep out;
  auto data = std::make_shared<StepData>(make_step_data(snap, doc, model_kind));
  if (chain) {
    out.provenance = chain->at(snap.segment);
    if (snap.segment > 0) out.provenance_before = chain->at(snap.segment - 1);
  } else if (data->mtn.present) {
    // MTN: a kept entry is one earlier token, named by its source (docs/models.md#provenance).
    std::vector<int64_t> src;
    for (const auto& e : data->mtn.entries) src.push_back(e.source);
    out.provenance = std::make_shared<const ProvenanceState>(
        kept_entry_provenance(snap.segment, src, snap.first_token + snap.length, kProvenanceTopK));
  }
  out.record = std::make_shared<SegmentRecord>(segment_record_of(*data, out.provenance.get()));
  out.step = std::move(data);
  return out;
}

ViewPublisher::ViewPublisher() = default;
ViewPublisher::~ViewPublisher() = default;
ViewPublisher::ViewPublisher(ViewPublisher&&) noexcept = default;
ViewPublisher& ViewPublisher::operator=(ViewPublisher&&) noexcept = default;

void ViewPublisher::open(std::shared_ptr<ViewSource> info, bool chain) {
  chain_.reset();
  provenance_note_.clear();
  shown_ = PublishedStep{};
  visited_.clear();
  ++visited_version_;
  if (info && info->id == 0) info->id = next_info_id_++;
  info_ = std::move(info);
  if (!info_ || !chain) return;
  const std::string& model_kind = info_->cfg.model;
  if (has_provenance_chain(model_kind))
    chain_ = std::make_unique<ProvenanceChain>(static_cast<int>(info_->cfg.slots), kProvenanceTopK);
  else if (capabilities_of(model_kind).provenance != ProvenanceKind::kKeptEntries)  // MTN's: in the trace
    provenance_note_ = "the " + model_kind + " model has no memory provenance (memformer, rmt, trxl-rmt and mtn have)";
}

std::vector<std::string> ViewPublisher::observed_keys() const {
  return chain_ ? provenance_trace_keys(info_->cfg.model) : std::vector<std::string>{};
}

void ViewPublisher::observe(int64_t segment, const Trace& trace) {
  if (!chain_ || !info_ || !info_->doc) return;
  const int64_t len = info_->segment_len;
  const int64_t first = segment * len;
  try {
    auto p = provenance_step_from_trace(trace, info_->cfg.model, segment, first,
                                        std::min(len, info_->doc->size() - first), len);
    if (p) chain_->record(std::move(*p));
  } catch (const std::exception& e) {
    provenance_note_ = std::string("provenance unavailable: ") + e.what();
  }
}

const PublishedStep& ViewPublisher::show(const Snapshot& snap) {
  shown_ = publish_step(snap, *info_->doc, info_->cfg.model, chain_.get());
  visited_.set(snap.segment, shown_.record);
  ++visited_version_;
  return shown_;
}

void ViewPublisher::remember(int64_t segment, std::shared_ptr<const SegmentRecord> record) {
  visited_.set(segment, std::move(record));
  ++visited_version_;
}

void ViewPublisher::clear_shown(bool forget_visited) {
  shown_ = PublishedStep{};
  if (forget_visited) {
    visited_.clear();
    ++visited_version_;
  }
}

ViewPtr ViewPublisher::view(int64_t position, const std::string& model_note, const std::string& session_dir) {
  auto v = std::make_shared<PublishedView>();
  v->version = ++version_;
  v->info = info_;
  v->step = shown_.step;
  v->position = shown_.step ? position : -1;
  v->visited = visited_;
  v->visited_version = visited_version_;
  v->model_note = model_note;
  v->provenance = shown_.step ? shown_.provenance : nullptr;
  v->provenance_before = shown_.step ? shown_.provenance_before : nullptr;
  v->provenance_note = provenance_note_;
  v->session_dir = session_dir;
  v->slot_effects = shown_.step ? shown_.slot_effects : nullptr;
  return v;
}

}  // namespace mnemo::app
