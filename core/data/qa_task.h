// Synthetic long-document question answering in the token-classification form of the
// Memory Transformer Network paper (Memory Transformer Networks (docs/references.md#mtn) §2.2.1).
//
// An example is a document of `doc_chunks` chunks of `chunk_len` bytes in which `facts`
// sentences "<name> lives in <city>." are scattered among filler sentences, and a query
// chunk "where does <name> live? <city> <city> ..." that lists `candidates` cities (the
// answer and cities of the other facts as distractors). Tokens are bytes (ByteTokenizer).
// A model reads the document chunk by chunk (reading phase: memory is updated, no loss),
// then reads the query chunk with its memory fixed (inference phase: memory NOT updated)
// and tags every query token as answer (1: the bytes of the right city) or not (0).
// Without memory the query can only be guessed (1 / candidates).
//
// Everything is deterministic under the seed: example(split, i) depends only on the
// options, the split and i (its own splitmix64 stream; no std:: distributions, whose
// output differs between standard libraries).
//
// Files: the options and their field table core/data/qa_options.h, the words
// core/data/qa_words.h, the generator (QaTask) core/data/qa_task.cpp, the TaskSource
// (QaTaskSource) core/data/qa_task_source.cpp.
#pragma once
#include "core/data/qa_options.h"
#include "core/data/tasks.h"
#include "core/errors.h"
#include "core/data/segment.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mnemo {

struct QaRng;

enum class QaSplit { kTrain, kValid, kTest };
const char* qa_split_name(QaSplit s);

struct QaExample {
  std::string document;            // reading-phase bytes, at most doc_chunks * chunk_len
  std::string query;               // "where does <name> live? <c1> <c2> ..." (one chunk at most)
  std::string name, answer;        // asked name and its city
  int64_t answer_begin = 0;        // byte offset of the answer inside query
  int64_t fact_begin = 0;          // byte offset of the asked fact sentence inside document
  std::vector<uint8_t> labels;     // one per query byte: 1 = answer byte, 0 = not
  std::vector<std::pair<int64_t, int64_t>> candidates;  // [begin, end) of each listed city in query
  int64_t answer_candidate = 0;    // which of them is the answer
};

// The candidate a tagger picks: the one with the largest mean P(answer) over its bytes
// (ties: the first). answer_prob: [>= query length] P(answer) of the query bytes.
int64_t qa_pick_candidate(const torch::Tensor& answer_prob, const QaExample& ex);

// The example as one stream of bytes, as a model reads it: the document padded with spaces
// to doc_chunks * chunk_len bytes, then the query (a document the app can step chunk by chunk;
// `mtn-qa`'s example figures).
std::string qa_stream(const QaExample& ex, const QaTaskOptions& opt);

// Model inputs of a batch, chunked for a model's step. Row b is example b.
// Token ids are bytes; padding is ByteTokenizer::kPad with valid = false. offsets hold the
// position in the example's stream (document padded to doc_chunks * chunk_len, then the
// query): {t, t + 1}, {-1, -1} on padding.
struct QaBatch {
  std::vector<SegmentInput> reading;  // doc_chunks chunks; targets undefined
  std::vector<SegmentInput> query;    // query chunks; targets = labels, target_valid = valid
  int64_t size = 0;
};

class QaTask {
 public:
  explicit QaTask(QaTaskOptions opt);  // validates
  const QaTaskOptions& options() const { return opt_; }
  int64_t size(QaSplit s) const;
  // Throws std::out_of_range for index outside 0..size(s)-1.
  QaExample example(QaSplit s, int64_t index) const;
  // Examples first..first+count-1 of split s (throws std::out_of_range past the end).
  QaBatch batch(QaSplit s, int64_t first, int64_t count, torch::Device device = torch::kCPU) const;
  QaBatch batch(const std::vector<QaExample>& examples, torch::Device device = torch::kCPU) const;
  // Share of answer tokens among query tokens of the first n train examples.
  double answer_share(int64_t n = 512) const;
  // The paper's weights, the inverse class frequencies: {1 / (1 - p), 1 / p} for
  // {not answer, answer}, p = answer_share().
  std::pair<double, double> class_weights(int64_t n = 512) const;

 private:
  // Candidates, query text, labels and spans of an example whose document is written.
  void finish_query(QaExample& ex, struct QaRng& rng, const std::vector<int64_t>& where,
                    int64_t asked) const;
  QaTaskOptions opt_;
};

// The QA task as a TaskSource (task name "qa"), so MTN and its baselines train through
// core/train like every other model: {"name": "qa", <QaTaskOptions fields>} (a "segments"
// field, e.g. from a curriculum, sets doc_chunks = segments - 1). Segments: doc_chunks
// reading chunks (no loss) then the query chunk, with TaskBatch::memory_frozen_from =
// doc_chunks (the memory after reading is fixed while the query is read). Accuracy and
// exact match are scored on the candidate cities' bytes (tagged answer or not); the task
// adds choice_accuracy, recall, fpr, pseudo_precision and pseudo_f1 (core/data/qa_metrics.h)
// to every evaluation. head() asks for answer tagging with the class weights of
// QaTask::class_weights() (a model that cannot tag tokens throws ConfigError in set_task_head).
class QaTaskSource : public TaskSource {
 public:
  explicit QaTaskSource(const nlohmann::json& cfg);  // ConfigError naming the option
  const QaTask& qa() const { return task_; }
  std::string name() const override { return "qa"; }
  nlohmann::json to_json() const override;
  int64_t length() const override { return segments() * segment_len(); }
  int64_t segments() const override { return task_.options().doc_chunks + 1; }
  int64_t segment_len() const override { return task_.options().chunk_len; }
  int64_t split_size(Split s) const override;
  TaskBatch batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const override;
  TaskHead head() const override;
  void accumulate_metrics(const TaskBatch& batch, const std::vector<torch::Tensor>& logits,
                          MetricSums& sums) const override;
  std::map<std::string, double> finish_metrics(const MetricSums& sums) const override;

 private:
  QaTask task_;
  std::pair<double, double> weights_;
};

}  // namespace mnemo
