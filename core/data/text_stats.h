// What a text model saw in training, and how a document compares (docs/training.md#unlike):
// the byte counts of its training text and a sample of its 64-byte passages, shipped in a zoo
// model's metadata ("training_text"), and the checks `eval --doc`, `step --doc` and the app
// make before they score or show a document: bytes the model never saw, a document that is
// mostly not text, and a document that overlaps the model's own training text.
#pragma once
#include "core/data/document.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mnemo {

class TextTask;

// Passages: every 64-byte window of the text is hashed (a polynomial rolling hash mixed by
// SplitMix64); those whose mixed hash is 0 mod kPassageSample are kept (content-defined, so a
// passage is sampled wherever it stands), by the top 32 bits of the mixed hash.
inline constexpr int kPassageLen = 64;
inline constexpr uint64_t kPassageSample = 1024;

struct TrainingTextStats {
  std::array<int64_t, 256> byte_counts{};
  int64_t bytes = 0;
  std::vector<uint32_t> passages;  // sorted, unique

  // Counts the bytes of `text` and samples its passages (call finish() after the last).
  void add(std::string_view text);
  void finish();
  bool has_passage(uint32_t id) const;
  // {"bytes": n, "byte_counts": [256], "passage_len": 64, "passage_sample": 1024,
  //  "passages": "<8 hex digits each>"}
  nlohmann::json to_json() const;
  // Throws ConfigError naming what is wrong (a damaged metadata entry).
  static TrainingTextStats from_json(const nlohmann::json& j);
};

// The passage ids sampled from `text` (in order, repeats kept).
std::vector<uint32_t> sample_passages(std::string_view text);

// The training split of a text task, read range by range (windows of the curricula not
// applied: the corpus's own bytes).
TrainingTextStats training_text_stats(const TextTask& task);

struct DocumentCheck {
  int64_t bytes = 0;
  // Bytes whose value never occurs in the training text: how many, and the most frequent
  // values (up to 8, by count).
  int64_t unseen = 0;
  std::vector<std::pair<int, int64_t>> unseen_values;
  bool checked_bytes = false;  // false: no statistics of the training text
  // Byte values rare in the training text but common here: at least 10 of them and 0.5 % of
  // the document, and 50 times their share of the training text (a line break for a model
  // trained on one-line addresses). (value, share here, share in training), most frequent first.
  struct Rare {
    int value = 0;
    double here = 0, training = 0;
  };
  std::vector<Rare> rare_values;
  int64_t rare = 0;  // bytes of those values
  // Not text: NUL bytes, invalid UTF-8, or over 10 % control bytes (other than tab, line
  // feed, carriage return, form feed).
  bool not_text = false;
  double control_fraction = 0;
  // Sampled passages of the document, and how many of them are in the training text.
  int64_t passages = 0, in_training = 0;
  double overlap() const { return passages ? static_cast<double>(in_training) / static_cast<double>(passages) : 0.0; }
  // One line per finding; empty when the document is text like the training text.
  std::vector<std::string> warnings() const;
  nlohmann::json to_json() const;
};

// `stats` null: the byte and overlap checks are not made (warnings() says so).
DocumentCheck check_document(const Document& doc, const TrainingTextStats* stats);

// A byte value as a reader knows it: "'\t' (0x09)", "0xE2", "'A' (0x41)".
std::string byte_name(int value);

}  // namespace mnemo
