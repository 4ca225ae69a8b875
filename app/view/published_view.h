// What the UI draws (the published view; a "session" in this project is always a training
// session directory, core/io/session.h), published by the worker thread as immutable shared_ptr<const ...>
// (docs/architecture.md#data-flow): the opened document and model, plain arrays of the shown step (so the UI
// thread never runs LibTorch), and what is remembered of every visited segment.
#pragma once
#include "app/figures/slot_effects.h"
#include "app/figures/step_data.h"
#include "core/data/document.h"
#include "core/models/config.h"
#include "core/models/stepping.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mnemo::app {

// The opened document and model. Replaced (with a new id) whenever either changes.
struct ViewSource {
  uint64_t id = 0;
  std::shared_ptr<const Document> doc;
  ModelConfig cfg;
  uint64_t seed = 0;
  std::string checkpoint;  // "" = randomly initialised under `seed`
  bool random_weights = false;  // a live model built without a checkpoint (exported figures say so)
  int64_t segment_len = 0, num_segments = 0;  // segment_len: tokens per segment stepped (stepping.segment_len)
  Stepping stepping;  // how the document is cut, against how the checkpoint was trained
  // Token index of each line's first token (after '\n'); 32 bits, as a document has at most
  // kMaxDocumentBytes tokens (a large text has a line start every few dozen bytes).
  std::vector<uint32_t> line_starts;
  bool not_text = false;             // the document holds NUL or bytes that are not UTF-8
  // How the document compares with the model's training text (core/data/text_stats.h
  // DocumentCheck::warnings: unseen bytes, mostly not text, overlap), for the Document
  // panel's banner; empty when it is like it.
  std::vector<std::string> doc_warnings;
  // 1 on the tokens the checkpoint's training task scores when the document is (a prefix of)
  // one of its episodes stepped as trained (core/data/tasks.h episode_scored_tokens); empty:
  // every token counts. Controls shows the loss over these beside the mean over every token.
  std::vector<uint8_t> scored_tokens;
  // The checkpoint's training task ("text", "copy", "qa", ...; "" when unknown or random
  // weights). "qa" tags answer bytes: its language-model head was never trained.
  std::string trained_task;
};


struct PublishedView {
  uint64_t version = 0;                       // bumps on every publication
  std::shared_ptr<const ViewSource> info;    // null until a document is open
  std::shared_ptr<const StepData> step;       // null before the first step
  int64_t position = -1;
  uint64_t visited_version = 0;               // bumps when `visited` changes
  VisitedSegments visited;
  std::string model_note;                     // "randomly initialised (seed 0)" / "weights from F"
  // Provenance of every memory entry after the shown step (docs/models.md#provenance): null
  // when the model has none (provenance_note says why) or before the first step.
  ProvenanceStatePtr provenance;
  // The same after the step before the shown one: what the shown step's memory reads held
  // (app/figures/memory_reads.h), also when a jump computed that step without showing it.
  ProvenanceStatePtr provenance_before;
  std::string provenance_note;
  std::string session_dir;  // replaying a training session: its directory ("" for a live model)
  // What each memory entry did for the shown step's predictions (Controller::
  // compute_slot_effects; app/figures/slot_effects.h); null until asked for, and again after
  // every new step.
  std::shared_ptr<const SlotEffects> slot_effects;

  // Loss of document token t as predicted by whichever visited step predicts it
  // (app/figures/step_data.h token_loss_at; NaN when none did).
  float token_loss(int64_t t) const;
  bool is_visited(int64_t segment) const { return visited.count(segment) != 0; }
};
using ViewPtr = std::shared_ptr<const PublishedView>;

// The window title: "Mnemoscope — <document> — <model>" for a live model; for a replay the
// session directory (never the recording file the probe was read from).
std::string window_title(const PublishedView& s);
// The menu bar's right side: "<document>  |  segment 4 of 6 (0..5)"; a replay names its session
// and the training step of the recording ("session run, probe recorded at training step 120"),
// never the trace file the probe was read from. "" without a document.
std::string status_text(const PublishedView& s);

// "segment 4 of 262 (0..261)": the position as the Document panel and the CLI count segments.
std::string position_text(int64_t segment, int64_t num_segments);

// Line starts of a document (token 0 and every token after a '\n').
std::vector<uint32_t> line_starts_of(const Document& doc);

}  // namespace mnemo::app
