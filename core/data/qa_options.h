// The options of the synthetic QA task (core/data/qa_task.h), declared once in a field table
// (core/io/config_fields.h): read from a task config {"name": "qa", ...}, checked, written
// back. Messages name the field as "task.<field>" (docs/training.md, "Tasks").
#pragma once
#include "core/io/config_fields.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace mnemo {

struct QaTaskOptions {
  uint64_t seed = 1;
  int64_t chunk_len = 48;   // bytes per chunk (the paper's 48 tokens)
  int64_t doc_chunks = 4;   // reading-phase chunks per document
  int64_t facts = 3;        // "<name> lives in <city>." sentences per document
  int64_t candidates = 3;   // cities listed in the query (1 answer + distractors)
  // 0: facts anywhere among the fillers. k >= 1: the facts lie in the first k chunks only
  // (each sentence inside one chunk, the chunks padded with spaces); the later chunks are
  // fillers, so the answer's fact is read at least doc_chunks - k chunks before the query.
  int64_t fact_chunks = 0;
  // Label warm-up (not in the paper; QaTaskSource only): train examples whose index is below
  // this are labelled by byte membership instead: a byte of a listed city is tagged 1 when
  // that byte occurs anywhere in the document. Training reads train examples in index order
  // (step * batch + i), so this is the first byte_label_warmup / batch steps. Valid and test
  // always have the task's labels. 0 = off.
  int64_t byte_label_warmup = 0;
  int64_t train_size = 4096, valid_size = 256, test_size = 256;

  // The field table (prefix "task."); fact_chunks and byte_label_warmup are written only
  // when set (> 0).
  static const ConfigFields<QaTaskOptions>& fields();
  // Throws ConfigError naming the field: counts out of range, or sizes for which the facts
  // cannot fit the document or the longest query cannot fit one chunk.
  void validate() const;
  nlohmann::json to_json() const;
  // Unknown keys are rejected; the result is validated.
  static QaTaskOptions from_json(const nlohmann::json& j);
};

}  // namespace mnemo
