#include "core/data/qa_options.h"

#include "core/data/qa_words.h"

#include <algorithm>
#include <string>

namespace mnemo {

const ConfigFields<QaTaskOptions>& QaTaskOptions::fields() {
  using O = QaTaskOptions;
  constexpr int64_t many = int64_t{1} << 40;
  const auto n_names = static_cast<int64_t>(qa::names().size()), n_cities = static_cast<int64_t>(qa::cities().size());
  static const ConfigFields<QaTaskOptions> table(
      "task.",
      {seed_field("seed", &O::seed, "the examples' generator"),
       int_field("chunk_len", &O::chunk_len, 1, 65536, "bytes per chunk"),
       int_field("doc_chunks", &O::doc_chunks, 1, 4096, "reading-phase chunks per document"),
       int_field("facts", &O::facts, 1, std::min(n_names, n_cities), "\"<name> lives in <city>.\" sentences per document"),
       int_field("candidates", &O::candidates, 1, n_cities, "cities listed in the query (1 answer + distractors)"),
       int_field("fact_chunks", &O::fact_chunks, 0, 4096, "the facts lie in the first k chunks only (0: anywhere)")
           .when([](const QaTaskOptions& o) { return o.fact_chunks > 0; }),
       int_field("byte_label_warmup", &O::byte_label_warmup, 0, many, "train examples labelled by byte membership")
           .when([](const QaTaskOptions& o) { return o.byte_label_warmup > 0; }),
       int_field("train_size", &O::train_size, 0, many, "train examples"),
       int_field("valid_size", &O::valid_size, 0, many, "valid examples"),
       int_field("test_size", &O::test_size, 0, many, "test examples")});
  return table;
}

void QaTaskOptions::validate() const {
  fields().validate(*this);
  check_range("task.fact_chunks", fact_chunks, 0, doc_chunks);
  const int64_t fact_max =
      static_cast<int64_t>(qa::fact(std::string(qa::max_len(qa::names()), 'x'), std::string(qa::max_len(qa::cities()), 'x')).size());
  const int64_t doc_bytes = doc_chunks * chunk_len;
  if (facts * (fact_max + 1) - 1 > doc_bytes)
    throw field_error("task.facts", "= " + std::to_string(facts) + ": that many facts (up to " + std::to_string(fact_max) +
                                        " bytes each) do not fit a document of doc_chunks * chunk_len = " +
                                        std::to_string(doc_bytes) + " bytes; raise doc_chunks or lower facts");
  if (fact_chunks > 0) {
    const int64_t per_chunk = (chunk_len + 1) / (fact_max + 1);
    if (facts > fact_chunks * per_chunk)
      throw field_error("task.facts", "= " + std::to_string(facts) + " do not fit the first fact_chunks = " +
                                          std::to_string(fact_chunks) + " chunks of " + std::to_string(chunk_len) +
                                          " bytes (" + std::to_string(per_chunk) + " facts of up to " +
                                          std::to_string(fact_max) +
                                          " bytes per chunk); raise fact_chunks or chunk_len, or lower facts");
  }
  const int64_t query_max = static_cast<int64_t>(std::string(qa::kQuestionHead).size() + qa::max_len(qa::names()) +
                                                 std::string(qa::kQuestionTail).size()) +
                            candidates * static_cast<int64_t>(qa::max_len(qa::cities()) + 1);
  if (query_max > chunk_len)
    throw field_error("task.chunk_len", "= " + std::to_string(chunk_len) + " is too short: a query with " +
                                            std::to_string(candidates) + " candidates takes up to " +
                                            std::to_string(query_max) +
                                            " bytes and must fit one chunk; raise chunk_len or lower candidates");
}

nlohmann::json QaTaskOptions::to_json() const { return fields().to_json(*this); }

QaTaskOptions QaTaskOptions::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw field_error("task", "must be a JSON object, got " + std::string(j.type_name()));
  QaTaskOptions o;
  fields().read(o, j);
  o.validate();
  return o;
}

}  // namespace mnemo
