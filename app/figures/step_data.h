// The one input type of every figure (app/figures/) and panel (app/gui/panels/): what a
// model step shows, as plain arrays and strings — no LibTorch, so the panels and the figure
// builders compile without it and the UI thread never runs a tensor op. The worker fills
// it from an engine Snapshot (app/figures/extract.h); nothing here refers back to tensors.
#pragma once
#include "core/trace/provenance.h"
// Each family in a folder of its own brings its part of StepData (one member below).
#include "families/memformer/view/step_data.h"
#include "families/mtn/view/step_data.h"

#include <array>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mnemo::app {

// The per-token losses of one step, by the document token each predicts (the trace contract
// of lm.loss, docs/formats.md; core/models/config.h LossTarget): values[i] is the
// cross-entropy, in nats, of predicting document token first + i. Tokens past the document's
// end (padding) are left out.
struct TokenLosses {
  int64_t first = 0;
  std::vector<float> values;
  bool empty() const { return values.empty(); }
  bool covers(int64_t t) const { return t >= first && t < first + static_cast<int64_t>(values.size()); }
};

// The mean of the losses in `losses` over the tokens `scored` marks (1 = scored by the
// model's training task, core/data/tasks.h episode_scored_tokens), and how many there were
// (NaN and 0 when none; non-finite losses are left out).
struct ScoredLoss {
  double mean = std::nan("");
  int64_t tokens = 0;
};
ScoredLoss scored_loss(const TokenLosses& losses, const std::vector<uint8_t>& scored);

// A run of rows or columns of an attention map that belong together (read memory, segment
// tokens, write memory, Transformer-XL cache, MTN memory).
struct AttnBlock {
  int first = 0, count = 0;
  std::string name;
};

// Attention maps of a decoder-style model (RMT family, Transformer-XL, the decoder-only
// baseline, the MTN family's joint layers), every traced layer and head, as plain arrays.
// Padding and empty memory entries are left out. Empty when the trace has none.
struct AttentionData {
  std::string kind;      // "RMT", "Transformer-XL", "Transformer", "MTN", ... (for titles)
  std::string source;    // trace key prefix the maps came from: "rmt.attn.", "trxl.attn.", "mtn.joint_attn."
  std::vector<int> layers;  // traced layers, ascending
  int heads = 0, rows = 0, cols = 0;
  // [layer index][block][rows][cols], block 0 = mean over heads, block 1 + h = head h.
  std::vector<float> values;
  std::vector<float> block_max;  // finite max of each (layer index, block)
  std::vector<std::string> row_labels, col_labels;
  // Document token index of each row / column (-1: a memory entry, not a token).
  std::vector<int64_t> row_token, col_token;
  std::vector<AttnBlock> row_blocks, col_blocks;
  // Block masses: names (e.g. "reading", "writing", "rewriting"), what each one measures,
  // and values [layer index][block (mean, heads)][name]; traced_mass = from rmt.block_mass.*
  // (else computed here from the maps shown).
  std::vector<std::string> mass_names, mass_help;
  std::vector<float> mass;
  bool traced_mass = false;

  bool empty() const { return layers.empty() || rows <= 0 || cols <= 0 || values.empty(); }
  int blocks() const { return heads + 1; }
  // The rows x cols map of layer index li (0..layers-1) and head (-1 = mean); null when empty.
  const float* map(int li, int head) const;
  float map_max(int li, int head) const;
  // Mass k of layer index li, head (-1 = mean); NaN when absent.
  float mass_at(int li, int head, int k) const;
  // Name of the block holding row / column i ("" when none).
  const AttnBlock* row_block(int i) const;
  const AttnBlock* col_block(int i) const;
};

// One hashed projection's bucket loads (hash.<path>.counts) and p(z) (hash.<path>.p).
struct HashPathData {
  std::string path;        // module path, e.g. "layers.0.attn.q"
  std::string group;       // the layer part of the path ("layers.0"; the path itself when it has no index)
  std::string projection;  // the rest ("attn.q")
  int tables = 0, buckets = 0;     // K, 2^tau
  std::vector<float> counts;       // [K x R] lookups per bucket
  std::vector<float> load;         // [K x R] lookups / mean lookups of its table (1 = uniform)
  std::vector<double> entropy, dead_fraction, max_load;  // per table
  std::vector<int64_t> lookups;                          // per table
  double mean_entropy = 0, mean_dead = 0, mean_max_load = 0;
  static constexpr int kPBins = 40;
  std::vector<float> p;            // p(z_k) of every row and table [N x K] (empty when not traced)
  std::vector<float> p_hist;       // kPBins bins over [0, 1] (empty when p was not traced)
  int64_t p_count = 0;
  double p_mean = 0;
};

struct HashData {
  std::vector<HashPathData> paths;  // sorted by path
  std::vector<std::string> groups;  // distinct groups in order of first appearance
  bool empty() const { return paths.empty(); }
};


// One step as plain arrays: the input of every figure and panel. Extracted from an engine
// Snapshot (app/figures/extract.h) on the worker thread, or read back from a recording.
struct StepData {
  int64_t segment = -1, num_segments = 0, first_token = 0, length = 0;
  // The training step of a probe recording this step was read from (export's maps); -1 for a
  // step of a model stepped now. Figure titles name it (segment_title).
  int64_t train_step = -1;
  int64_t segment_len = 0;  // L the model was given (length <= L; the last segment is padded)
  double loss = std::nan("");
  bool non_finite = false;
  std::string non_finite_key;

  // The step's per-token losses by the token each predicts (empty when the model predicts
  // none here); loss_next_segment: they are the next segment's tokens (Memformer), else
  // each position's next token (sL+1 .. sL+L).
  TokenLosses token_losses;
  bool loss_next_segment = false;
  // Memory benefit (Engine::set_memory_benefit): the same tokens' losses with the step's
  // memory reset to the initial memory / zeroed (empty when not computed). The memory's
  // benefit to a token, in bits: (reset - with) / ln 2; positive = the memory helped.
  TokenLosses token_losses_reset, token_losses_zeroed;

  AttentionData attention;  // RMT / Transformer-XL / MTN joint attention (empty for Memformer)
  // Further attention maps of the same step: Transformer-XL's cache attention of a
  // Transformer-XL + RMT model (whose primary map is the RMT one).
  std::vector<AttentionData> extra_attention;
  HashData hash;            // hashed projections ("linear": "hashed")
  // Each family's part: what its extractor read from the step's trace (empty when the trace
  // holds none of its keys; `present` says which).
  MemformerData memformer;  // writer, memory read, slots (families/memformer/view/step_data.h)
  MtnData mtn;              // MTN kept tokens, QA answers (families/mtn/view/step_data.h)
};

// "segment 3", or "segment 3, training step 100" for a probe recording's step (train_step >= 0);
// `unit` names the segment ("chunk" for MTN).
std::string segment_title(int64_t segment, int64_t train_step, const char* unit = "segment");
inline std::string segment_title(const StepData& st, const char* unit = "segment") {
  return segment_title(st.segment, st.train_step, unit);
}

// Splits a hashed projection's module path into its layer part and the rest:
// "layers.0.attn.q" -> {"layers.0", "attn.q"}; a path without a numeric part -> {path, ""}.
std::pair<std::string, std::string> split_hash_path(const std::string& path);

// What is kept of a visited segment (for the slot timeline and token losses).
struct SegmentRecord {
  // [slots]: StepData::memformer.self_mass, the only family's with a writer. It stays here, not
  // in a Memformer part: a record is kept per visited segment for every family (the token
  // losses, provenance), the Slot timeline reads it across segments, and an empty vector
  // costs the other families nothing.
  std::vector<float> self_mass;
  TokenLosses token_losses;      // the step's per-token losses (StepData::token_losses)
  TokenLosses token_losses_reset, token_losses_zeroed;  // the memory benefit's (StepData), or empty
  // What each memory entry holds after this step (docs/models.md#provenance): its largest
  // source tokens [slots x prov_top_k], descending, and the initial-memory share [slots];
  // empty when the model has no provenance.
  int prov_top_k = 0;
  std::vector<ProvenanceSource> prov_top;
  std::vector<float> prov_initial;
};

// The visited segments of a document, by segment index: what every published view carries.
// Copying it is cheap and shares everything: the records sit in immutable blocks of
// kBlock segments, and a copy copies one pointer per block (docs/architecture.md#data-flow),
// so publishing a view after each of n steps costs O(n / kBlock) pointer copies, not a copy of
// n map nodes. set() replaces the one block it changes (copy on write): a published copy
// never sees later changes. Iterates like a std::map<int64_t, Record> (ascending segments;
// rbegin() descending; find / at / count).
class VisitedSegments {
 public:
  using Record = std::shared_ptr<const SegmentRecord>;
  using value_type = std::pair<int64_t, Record>;
  static constexpr int64_t kBlock = 64;

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = VisitedSegments::value_type;
    using difference_type = std::ptrdiff_t;
    using reference = value_type;  // by value: the pair is made on the fly
    struct pointer {
      value_type p;
      const value_type* operator->() const { return &p; }
    };
    const_iterator() = default;
    value_type operator*() const { return {seg_, *v_->slot(seg_)}; }
    pointer operator->() const { return pointer{**this}; }
    const_iterator& operator++() {
      seg_ = reverse_ ? v_->prev_present(seg_ - 1) : v_->next_present(seg_ + 1);
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const const_iterator& o) const { return seg_ == o.seg_; }
    bool operator!=(const const_iterator& o) const { return seg_ != o.seg_; }

   private:
    friend class VisitedSegments;
    const_iterator(const VisitedSegments* v, int64_t seg, bool reverse) : v_(v), seg_(seg), reverse_(reverse) {}
    const VisitedSegments* v_ = nullptr;
    int64_t seg_ = -1;  // -1: past the end (either direction)
    bool reverse_ = false;
  };
  using iterator = const_iterator;
  using reverse_iterator = const_iterator;

  VisitedSegments() = default;
  VisitedSegments(std::initializer_list<value_type> records);

  // Remembers `record` for `segment` (>= 0, else std::invalid_argument); a null record forgets it.
  void set(int64_t segment, Record record);
  void erase(int64_t segment) { set(segment, nullptr); }
  void clear();

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t count(int64_t segment) const { return slot(segment) ? 1 : 0; }
  // The record of a visited segment; std::out_of_range when it was not visited.
  const Record& at(int64_t segment) const;
  const_iterator find(int64_t segment) const { return {this, count(segment) ? segment : -1, false}; }

  const_iterator begin() const { return {this, next_present(0), false}; }
  const_iterator end() const { return {this, -1, false}; }
  reverse_iterator rbegin() const { return {this, prev_present(capacity() - 1), true}; }
  reverse_iterator rend() const { return {this, -1, true}; }

 private:
  using Block = std::array<Record, kBlock>;
  int64_t capacity() const { return static_cast<int64_t>(blocks_.size()) * kBlock; }
  // The stored record of `segment`, or null (not a reference to a null: no record stored).
  const Record* slot(int64_t segment) const;
  int64_t next_present(int64_t from) const;  // the first visited segment >= from, or -1
  int64_t prev_present(int64_t from) const;  // the last visited segment <= from, or -1
  std::vector<std::shared_ptr<const Block>> blocks_;
  size_t size_ = 0;
};

// The loss of document token t and the segment whose step predicted it: whichever visited
// step's token_losses cover t (at most one does: the steps' ranges are disjoint for one
// model). loss NaN and segment -1 when no visited step predicted t.
struct TokenLossAt {
  float loss = NAN;
  int64_t segment = -1;
  // The same prediction with the step's memory reset / zeroed (NaN when not computed): the
  // memory's benefit to t is (loss_reset - loss) / ln 2 bits (app/figures/benefit.h).
  float loss_reset = NAN, loss_zeroed = NAN;
};
TokenLossAt token_loss_at(const VisitedSegments& visited, int64_t segment_len, int64_t t);
float token_loss(const VisitedSegments& visited, int64_t segment_len, int64_t t);
// The segment whose step predicts token t for a model that predicts the next segment or the
// next token (-1 when none does: token 0, or segment 0 under next-segment prediction).
int64_t predicting_segment(bool next_segment, int64_t segment_len, int64_t t);
// The record kept of a visited step: its self mass, token losses and the provenance after
// it (null: none). Every producer of the published view builds it here.
SegmentRecord segment_record_of(const StepData& step, const ProvenanceState* provenance);

}  // namespace mnemo::app
