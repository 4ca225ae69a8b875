// The MTN family's part of a step's StepData (app/figures/step_data.h): the memory after the
// step as the document's own tokens, keep_m_max's candidates and the document view. Filled by
// the family's extractor (families/mtn/view/extract.cpp); plain arrays, no LibTorch.
#pragma once
#include <cstdint>
#include <vector>

namespace mnemo::app {

// The Memory Transformer Network's memory after the step, as the document's own tokens.
struct MtnEntry {
  int64_t source = -1;      // document token index (-1: empty entry)
  float importance = 0.f;   // V_I.e + b_I
  int64_t age = -1;         // keep_m_max operations survived (0 = kept from this chunk)
};
// The MTN document view: from the oldest kept token, or this many tokens before the chunk if
// that is earlier (from a chunk start), at most kMaxDocumentView tokens in all.
inline constexpr int64_t kDocumentContext = 320;
inline constexpr int64_t kMaxDocumentView = 1536;

struct MtnData {
  bool present = false;            // mtn.kept_source was traced
  std::vector<MtnEntry> entries;   // memory order (decreasing importance), empty entries included
  int64_t kept = 0, max_age = 0;
  float imp_min = 0.f, imp_max = 0.f;  // over kept entries and candidates
  // keep_m_max's candidates (previous memory then chunk tokens; empty ones left out).
  std::vector<int64_t> cand_source;
  std::vector<float> cand_importance;
  std::vector<uint8_t> cand_kept;  // 1 when kept for the next chunk
  int n_mem_candidates = 0;
  // Document view: tokens [view_first, view_end); entry of each (-1: not in memory).
  int64_t view_first = 0, view_end = 0;
  std::vector<int> entry_of;
  // A model stepped with its answer-tagging head (mtn-qa, TaskHead::Kind::kAnswerTagging):
  // P(answer) of each of the segment's real tokens (qa.answer_prob, [length]); empty otherwise,
  // and filled whether or not `present` (an MTN-family model without kept tokens answers too).
  // The question's candidates and their means: app/figures/qa.h.
  std::vector<float> qa_answer_prob;
};

}  // namespace mnemo::app
