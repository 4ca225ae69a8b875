// Memory provenance (docs/models.md#provenance): which earlier document tokens the content of
// each memory entry came from. Plain C++ (no LibTorch), so the app's model layer and panels
// use it without tensors; core/trace/provenance_trace.h builds the per-step records from
// traces.
//
// A memory entry i after step t is described as a distribution over the document tokens,
// the initial memory m_0 and "other" inputs (Memformer's cls tokens, trxl-rmt's token cache):
//
//   prov_t(i) = Σ_r carry_t[i, r] · prov_{t−1}(r) + Σ_j source_t[i, j] · e_{token j} + other_t[i] · e_other
//
// with prov_{−1}(r) = e_initial. Memformer's carry is diagonal (a_self of the writer, mean over
// heads); RMT's is dense (attention rollout restricted to the memory path). Each step's rows
// are normalised to sum to 1 on record, so every prov_t(i) sums to 1.
//
// ProvenanceChain is incremental: stepping forward costs one update of the last state; a
// jump starts from the nearest kept state (one every `checkpoint_every` steps) and is exact —
// the same arithmetic in the same order as stepping there. A state after step t holds a share
// for every token seen, so it grows with t and keeping one every k steps would cost memory
// quadratic in the steps taken (576 MB after 3000 steps of 16 slots and 32 tokens at k = 16).
// The kept states are therefore held under a byte budget: when it is exceeded the spacing
// doubles and every other kept state is dropped, so a long run costs at most the budget (plus
// the last state), and a jump at most `spacing` updates.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace mnemo {

// How the memory after step `segment` is made of the memory before it and of the step's tokens.
struct ProvenanceStep {
  int64_t segment = -1;
  int slots = 0;
  int64_t first_token = 0;    // document index of token column 0
  int tokens = 0;             // real tokens of the segment (columns of `source`)
  bool diagonal = true;       // carry is [slots] (entry i keeps its own share) or [slots x slots]
  std::vector<float> carry;   // share taken from the previous memory
  std::vector<float> source;  // [slots x tokens] share taken from each token
  std::vector<float> other;   // [slots] share from inputs that are neither (may be empty = 0)

  // Throws std::invalid_argument on sizes that do not fit, negative or non-finite weights.
  void validate() const;
  // Scales each row (carry + source + other) to sum 1; a row that sums to 0 becomes all
  // carry (the entry is unchanged: diagonal) or all other (dense).
  void normalise();
};

// One source token and its share.
struct ProvenanceSource {
  int64_t token = -1;  // document token index; -1 = none (padding of a short list)
  float weight = 0.f;
};

// The provenance of every memory entry after one step.
struct ProvenanceState {
  int64_t segment = -1;          // -1: before the first step (everything is initial memory)
  int slots = 0;
  int64_t token_begin = 0;       // shares exist for document tokens [token_begin, tokens);
  int64_t tokens = 0;            // a chain started at a later segment counts what came
                                 // before it as its initial memory
  std::vector<float> weight;     // [slots x (tokens - token_begin)]
  std::vector<float> initial;    // [slots] share of the initial memory m_0
  std::vector<float> other;      // [slots] share of other inputs
  int top_k = 0;
  std::vector<ProvenanceSource> top;  // [slots x top_k] largest token shares, descending

  int64_t width() const { return tokens - token_begin; }
  // The shares of tokens token_begin.. of one slot.
  const float* row(int slot) const { return weight.data() + static_cast<size_t>(slot) * static_cast<size_t>(width()); }
  float at(int slot, int64_t token) const {
    return token >= token_begin && token < tokens ? row(slot)[token - token_begin] : 0.f;
  }
  const ProvenanceSource* top_of(int slot) const { return top.data() + static_cast<size_t>(slot) * top_k; }
  // Largest token share of a slot (0 when there are no tokens).
  float row_max(int slot) const;
};
using ProvenanceStatePtr = std::shared_ptr<const ProvenanceState>;

// Everything is initial memory (before the first step); token_begin > 0 starts a chain at a
// later segment (what came before is then its initial memory).
ProvenanceState initial_provenance(int slots, int top_k, int64_t token_begin = 0);
// prov_t from prov_{t-1} and step t's record (step.first_token + step.tokens may extend the
// token range). The record must be normalised and have prev.slots entries.
ProvenanceState advance_provenance(const ProvenanceState& prev, const ProvenanceStep& step);
// Fills state.top from state.weight (top_k per slot).
void fill_top_sources(ProvenanceState* state);

class ProvenanceChain {
 public:
  // Kept states cost at most `kept_budget_bytes` (their shares), whatever the number of steps.
  static constexpr int64_t kDefaultKeptBudgetBytes = int64_t{32} << 20;
  explicit ProvenanceChain(int slots, int top_k = 5, int checkpoint_every = 16,
                           int64_t kept_budget_bytes = kDefaultKeptBudgetBytes);
  int slots() const { return slots_; }

  // Records step `step.segment` (validated, normalised). Replacing a record with different
  // weights drops the states computed from it. Throws std::invalid_argument when the record
  // does not fit (slots, sizes, weights).
  void record(ProvenanceStep step);
  bool has_record(int64_t segment) const { return records_.count(segment) != 0; }
  // The provenance after step t (-1: before the first). Null when a record of 0..t is missing.
  ProvenanceStatePtr at(int64_t t);
  // Number of single-step updates done so far (stepping forward costs exactly one).
  int64_t updates() const { return updates_; }
  // Forgets every record and state (the spacing goes back to checkpoint_every).
  void clear();
  // Bytes of shares held by the kept states (not counting the state before the first step),
  // and the spacing between them now.
  int64_t kept_bytes() const;
  int checkpoint_spacing() const { return spacing_; }

 private:
  void keep(int64_t segment, ProvenanceStatePtr state);  // at `segment`, then thinned to the budget
  int slots_, top_k_, checkpoint_every_;
  int64_t budget_;
  int spacing_;               // keep states at multiples of this (checkpoint_every, doubled under the budget)
  std::map<int64_t, ProvenanceStep> records_;
  std::map<int64_t, ProvenanceStatePtr> kept_;  // every spacing_-th state, and -1
  ProvenanceStatePtr last_;                     // the state asked for last
  int64_t updates_ = 0;
};

// The MTN memory's provenance: each kept entry is one document token (kept_source[i], -1 =
// empty entry, which counts as initial memory), exactly.
ProvenanceState kept_entry_provenance(int64_t segment, const std::vector<int64_t>& kept_source, int64_t tokens,
                                      int top_k);

// A Memformer step's record from its writer attention, mean over heads, [slots x cols] with
// cols = 1 (self) + length (real tokens) + n_cls: carry = column 0, source = the token
// columns, other = the cls columns.
ProvenanceStep memformer_provenance_step(int64_t segment, int64_t first_token, int slots, int length, int n_cls,
                                         const float* writer_mean);

}  // namespace mnemo
