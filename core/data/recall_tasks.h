// Memory tasks in next-segment form: the information sits in the first segment and is asked
// for two or more segments later, so that only a memory can carry it (docs/training.md
// "Memory tasks"). Built for Memformer, whose decoder sees the previous segment's encoding
// (a question one segment after the information would not test the memory), and usable by
// every other model through the within-sequence targets.
//
// An example is S segments of L bytes, no padding (so its text re-segments exactly):
//   segment 0        ">" + information
//   segments 1..S-2  "." + distractor bytes (random capitals 'A'..'Z'; nothing to predict)
//   segment S-1      "?" + the question and its answers
// copy-recall with F facts (`facts`, default 1): segments 0..F-1 are ">" + src_f, the
// distractors fill segments F..S-F-1 (at least one), and segments S-F..S-1 are "?" + src_f
// in the same order, every src byte scored: the memory must take in a second fact while it
// keeps the first.
//   copy-recall   information = src (source_len symbols from 'a'..), question = src again;
//                 every src byte of the last segment is scored.     L = source_len + 1
//   assoc-recall  information = k1 v1 .. kP vP (P distinct letter keys from 'a'.., digit
//                 values), question = the same pairs with the keys in a random order; the
//                 values of the last segment are scored.            L = 2 pairs + 1
// Chance per scored byte: 1/symbols (copy), 1/10 (assoc values).
//
// Targets: Memformer-style models (next segment) get next_tokens = segment t+1 with
// next_valid on the scored bytes (the last input segment gets an all-padding next segment
// with no loss); decoder models get the within-sequence next token, valid where that token
// is scored. With memory zeroed between segments nothing about the information reaches the
// last segment, so accuracy falls to chance.
//
// Config ("task"): name, segments (3..4096, default 3; copy with F facts: at least 2F+1),
// facts (copy, 1..64, default 1), source_len (copy, 1..1024, default 8),
// pairs (assoc, 1..26, default 4), symbols (copy 2..26 default 10; assoc: key alphabet,
// pairs..26, default 26), train_size, valid_size, test_size, seed. Deterministic under the
// seed: example i of a split depends only on (seed, split, i mod split size); the
// information and question of an example do not depend on the number of segments, so a
// curriculum over segments keeps the same facts and only adds distractors.
#pragma once
#include "core/data/task_fields.h"
#include "core/data/tasks.h"

#include <memory>

namespace mnemo {

class RecallTask : public TaskSource {
 public:
  explicit RecallTask(const nlohmann::json& cfg);  // validates (ConfigError)
  std::string name() const override { return kind_; }
  nlohmann::json to_json() const override;
  int64_t length() const override { return segments_ * len_; }
  int64_t segments() const override { return segments_; }
  int64_t segment_len() const override { return len_; }
  int64_t split_size(Split s) const override;
  TaskBatch batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const override;

  // Example `index` (taken mod split size) as bytes and its scored positions.
  TaskExample example(Split s, int64_t index) const;
  double chance() const;  // accuracy of a uniform guess per scored byte

 private:
  // Its fields for read_task_fields / write_task_fields (which only reads them).
  std::vector<TaskField> fields();
  std::string kind_;
  int64_t segments_ = 3, source_len_ = 8, pairs_ = 4, symbols_ = 10, facts_ = 1, len_ = 0;
  int64_t sizes_[3] = {100000, 2000, 2000};
  uint64_t seed_ = 1;
};

}  // namespace mnemo
