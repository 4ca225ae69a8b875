#include "core/data/qa_task.h"

#include "core/data/qa_metrics.h"
#include "core/data/task_fields.h"
#include "core/data/tokenizer.h"
#include "core/models/mtn.h"

#include <algorithm>
#include <stdexcept>

namespace mnemo {

namespace {

// Word lists: lower-case ASCII, no word is a substring of a query's fixed text and no city
// is a name (so the answer bytes occur exactly once in the query).
const std::vector<std::string>& names() {
  static const std::vector<std::string> v = {"anna", "ben",  "carl", "dora", "emil", "fay",  "gus",
                                             "hana", "ivan", "jon",  "kim",  "lea",  "max",  "nina",
                                             "otto", "pia",  "quin", "rosa", "sam",  "tara", "uma",
                                             "vic",  "wes",  "yara", "zoe"};
  return v;
}
const std::vector<std::string>& cities() {
  static const std::vector<std::string> v = {"oslo", "rome", "lima", "kyiv", "riga", "doha", "baku",
                                             "bern", "cork", "faro", "gent", "graz", "hue",  "ica",
                                             "kobe", "linz", "lodz", "nice", "pisa", "pune", "sfax",
                                             "tula", "ufa",  "vigo", "york"};
  return v;
}
const std::vector<std::string>& fillers() {
  static const std::vector<std::string> v = {
      "the sky was grey.",    "a dog barked.",       "rain fell all day.", "the tea was cold.",
      "we sat by the fire.",  "the bus was late.",   "a bird sang.",       "the road was long.",
      "bread was baked.",     "the lamp flickered.", "snow began to fall.", "the clock ticked.",
      "a door creaked.",      "the sea was calm.",   "the wind rose.",     "leaves fell."};
  return v;
}

constexpr const char* kQuestionHead = "where does ";
constexpr const char* kQuestionTail = " live?";

std::string fact(const std::string& name, const std::string& city) { return name + " lives in " + city + "."; }

size_t max_len(const std::vector<std::string>& v) {
  size_t n = 0;
  for (const auto& s : v) n = std::max(n, s.size());
  return n;
}

}  // namespace

struct QaRng : SplitMix64 {
  using SplitMix64::SplitMix64;
};

namespace {

void range(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    throw ConfigError("qa task option '" + std::string(field) + "' = " + std::to_string(v) + " is out of range " +
                      std::to_string(lo) + ".." + std::to_string(hi));
}

SegmentInput make_chunk(int64_t b, int64_t l, bool with_targets) {
  SegmentInput in;
  in.tokens = torch::full({b, l}, ByteTokenizer::kPad, torch::kInt64);
  in.valid = torch::zeros({b, l}, torch::kBool);
  in.offsets = torch::full({b, l, 2}, -1, torch::kInt64);
  if (with_targets) {
    in.targets = torch::zeros({b, l}, torch::kInt64);
    in.target_valid = torch::zeros({b, l}, torch::kBool);
  }
  return in;
}

void to_device(SegmentInput& in, torch::Device dev) {
  in.tokens = in.tokens.to(dev);
  in.valid = in.valid.to(dev);
  in.offsets = in.offsets.to(dev);
  if (in.targets.defined()) {
    in.targets = in.targets.to(dev);
    in.target_valid = in.target_valid.to(dev);
  }
}

}  // namespace

void QaTaskOptions::validate() const {
  range("chunk_len", chunk_len, 1, 65536);
  range("doc_chunks", doc_chunks, 1, 4096);
  range("facts", facts, 1, static_cast<int64_t>(std::min(names().size(), cities().size())));
  range("candidates", candidates, 1, static_cast<int64_t>(cities().size()));
  range("train_size", train_size, 0, int64_t{1} << 40);
  range("valid_size", valid_size, 0, int64_t{1} << 40);
  range("test_size", test_size, 0, int64_t{1} << 40);
  const int64_t fact_max = static_cast<int64_t>(fact(std::string(max_len(names()), 'x'), std::string(max_len(cities()), 'x')).size());
  const int64_t doc_bytes = doc_chunks * chunk_len;
  if (facts * (fact_max + 1) - 1 > doc_bytes)
    throw ConfigError("qa task option 'facts' = " + std::to_string(facts) + ": that many facts (up to " +
                      std::to_string(fact_max) + " bytes each) do not fit a document of doc_chunks * chunk_len = " +
                      std::to_string(doc_bytes) + " bytes; raise doc_chunks or lower facts");
  range("fact_chunks", fact_chunks, 0, doc_chunks);
  range("byte_label_warmup", byte_label_warmup, 0, int64_t{1} << 40);
  if (fact_chunks > 0) {
    const int64_t per_chunk = (chunk_len + 1) / (fact_max + 1);
    if (facts > fact_chunks * per_chunk)
      throw ConfigError("qa task option 'facts' = " + std::to_string(facts) + " do not fit the first fact_chunks = " +
                        std::to_string(fact_chunks) + " chunks of " + std::to_string(chunk_len) + " bytes (" +
                        std::to_string(per_chunk) + " facts of up to " + std::to_string(fact_max) +
                        " bytes per chunk); raise fact_chunks or chunk_len, or lower facts");
  }
  const int64_t query_max = static_cast<int64_t>(std::string(kQuestionHead).size() + max_len(names()) +
                                                 std::string(kQuestionTail).size()) +
                            candidates * static_cast<int64_t>(max_len(cities()) + 1);
  if (query_max > chunk_len)
    throw ConfigError("qa task option 'chunk_len' = " + std::to_string(chunk_len) + " is too short: a query with " +
                      std::to_string(candidates) + " candidates takes up to " + std::to_string(query_max) +
                      " bytes and must fit one chunk; raise chunk_len or lower candidates");
}

nlohmann::json QaTaskOptions::to_json() const {
  nlohmann::json j = {{"seed", seed},           {"chunk_len", chunk_len},   {"doc_chunks", doc_chunks},
                      {"facts", facts},         {"candidates", candidates}, {"train_size", train_size},
                      {"valid_size", valid_size}, {"test_size", test_size}};
  if (fact_chunks > 0) j["fact_chunks"] = fact_chunks;
  if (byte_label_warmup > 0) j["byte_label_warmup"] = byte_label_warmup;
  return j;
}

QaTaskOptions QaTaskOptions::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("qa task options must be a JSON object, got " + std::string(j.type_name()));
  QaTaskOptions o;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
      throw ConfigError("qa task option '" + k + "' must be a non-negative integer, got " + v.dump());
    if (k == "seed") o.seed = v.get<uint64_t>();
    else if (k == "chunk_len") o.chunk_len = v.get<int64_t>();
    else if (k == "doc_chunks") o.doc_chunks = v.get<int64_t>();
    else if (k == "facts") o.facts = v.get<int64_t>();
    else if (k == "candidates") o.candidates = v.get<int64_t>();
    else if (k == "train_size") o.train_size = v.get<int64_t>();
    else if (k == "valid_size") o.valid_size = v.get<int64_t>();
    else if (k == "test_size") o.test_size = v.get<int64_t>();
    else if (k == "fact_chunks") o.fact_chunks = v.get<int64_t>();
    else if (k == "byte_label_warmup") o.byte_label_warmup = v.get<int64_t>();
    else
      throw ConfigError("qa task option '" + k + "' is unknown; known: seed, chunk_len, doc_chunks, facts, candidates, "
                        "fact_chunks, byte_label_warmup, train_size, valid_size, test_size");
  }
  o.validate();
  return o;
}

const char* qa_split_name(QaSplit s) {
  switch (s) {
    case QaSplit::kTrain: return "train";
    case QaSplit::kValid: return "valid";
    case QaSplit::kTest: return "test";
  }
  return "?";
}

QaTask::QaTask(QaTaskOptions opt) : opt_(opt) { opt_.validate(); }

int64_t QaTask::size(QaSplit s) const {
  switch (s) {
    case QaSplit::kTrain: return opt_.train_size;
    case QaSplit::kValid: return opt_.valid_size;
    case QaSplit::kTest: return opt_.test_size;
  }
  return 0;
}

QaExample QaTask::example(QaSplit s, int64_t index) const {
  if (index < 0 || index >= size(s))
    throw std::out_of_range(std::string("qa ") + qa_split_name(s) + " example " + std::to_string(index) +
                            " is out of range 0.." + std::to_string(size(s) - 1));
  // One stream per (seed, split, index).
  QaRng seeder{opt_.seed};
  const uint64_t base = seeder.next();
  QaRng rng{base ^ (0xA24BAED4963EE407ull * (static_cast<uint64_t>(s) + 1)) ^ (0x9FB21C651E98DF25ull * static_cast<uint64_t>(index + 1))};
  rng.next();

  const auto& nm = names();
  const auto& ct = cities();
  const int64_t nf = opt_.facts;
  auto who = rng.pick(static_cast<int64_t>(nm.size()), nf);
  auto where = rng.pick(static_cast<int64_t>(ct.size()), nf);

  // Sentences: the facts, then fillers while they fit, then shuffled.
  struct Sentence {
    std::string text;
    int64_t fact = -1;
  };
  const auto& fl = fillers();
  if (opt_.fact_chunks > 0) {
    // Facts only in the first fact_chunks chunks; every sentence inside one chunk, each
    // chunk filled with fillers and padded with spaces to its end.
    const int64_t l = opt_.chunk_len;
    std::vector<std::vector<Sentence>> chunk(static_cast<size_t>(opt_.doc_chunks));
    std::vector<int64_t> used(static_cast<size_t>(opt_.doc_chunks), -1);
    auto fits = [&](int64_t c, const std::string& t) { return used[c] + 1 + static_cast<int64_t>(t.size()) <= l; };
    for (int64_t f = 0; f < nf; ++f) {
      std::vector<int64_t> open;
      for (int64_t c = 0; c < opt_.fact_chunks; ++c)
        if (fits(c, fact(nm[who[f]], ct[where[f]]))) open.push_back(c);
      TORCH_CHECK(!open.empty(), "qa example: no room for a fact (validate() should have refused these options)");
      const int64_t c = open[static_cast<size_t>(rng.below(static_cast<int64_t>(open.size())))];
      chunk[c].push_back({fact(nm[who[f]], ct[where[f]]), f});
      used[c] += 1 + static_cast<int64_t>(chunk[c].back().text.size());
    }
    for (int64_t c = 0; c < opt_.doc_chunks; ++c) {
      for (int misses = 0; misses < 8;) {
        const auto& t = fl[static_cast<size_t>(rng.below(static_cast<int64_t>(fl.size())))];
        if (fits(c, t)) {
          chunk[c].push_back({t, -1});
          used[c] += 1 + static_cast<int64_t>(t.size());
        } else {
          ++misses;
        }
      }
      rng.shuffle(chunk[c]);
    }
    const int64_t asked = rng.below(nf);
    QaExample ex;
    for (int64_t c = 0; c < opt_.doc_chunks; ++c) {
      std::string text;
      for (const auto& st : chunk[c]) {
        if (!text.empty()) text.push_back(' ');
        if (st.fact == asked) ex.fact_begin = c * l + static_cast<int64_t>(text.size());
        text += st.text;
      }
      text.resize(static_cast<size_t>(l), ' ');
      ex.document += text;
    }
    ex.name = nm[who[asked]];
    ex.answer = ct[where[asked]];
    finish_query(ex, rng, where, asked);
    return ex;
  }
  std::vector<Sentence> sent;
  int64_t used = -1;  // bytes with one space between sentences
  for (int64_t f = 0; f < nf; ++f) {
    sent.push_back({fact(nm[who[f]], ct[where[f]]), f});
    used += static_cast<int64_t>(sent.back().text.size()) + 1;
  }
  const int64_t budget = opt_.doc_chunks * opt_.chunk_len;
  for (int misses = 0; misses < 8;) {
    const auto& t = fl[static_cast<size_t>(rng.below(static_cast<int64_t>(fl.size())))];
    if (used + 1 + static_cast<int64_t>(t.size()) <= budget) {
      sent.push_back({t, -1});
      used += 1 + static_cast<int64_t>(t.size());
    } else {
      ++misses;
    }
  }
  rng.shuffle(sent);
  const int64_t asked = rng.below(nf);

  QaExample ex;
  for (const auto& st : sent) {
    if (!ex.document.empty()) ex.document.push_back(' ');
    if (st.fact == asked) ex.fact_begin = static_cast<int64_t>(ex.document.size());
    ex.document += st.text;
  }
  ex.name = nm[who[asked]];
  ex.answer = ct[where[asked]];
  finish_query(ex, rng, where, asked);
  return ex;
}

void QaTask::finish_query(QaExample& ex, QaRng& rng, const std::vector<int64_t>& where, int64_t asked) const {
  const auto& ct = cities();
  const int64_t nf = opt_.facts;
  // Candidates: the answer, the other facts' cities, then cities not in the document.
  std::vector<std::string> cand{ex.answer};
  std::vector<int64_t> others;
  for (int64_t f = 0; f < nf; ++f)
    if (f != asked) others.push_back(where[f]);
  rng.shuffle(others);
  for (int64_t c : others)
    if (static_cast<int64_t>(cand.size()) < opt_.candidates) cand.push_back(ct[c]);
  if (static_cast<int64_t>(cand.size()) < opt_.candidates) {
    std::vector<int64_t> rest;
    for (int64_t c = 0; c < static_cast<int64_t>(ct.size()); ++c)
      if (std::find(where.begin(), where.end(), c) == where.end()) rest.push_back(c);
    rng.shuffle(rest);
    for (int64_t c : rest)
      if (static_cast<int64_t>(cand.size()) < opt_.candidates) cand.push_back(ct[c]);
  }
  rng.shuffle(cand);
  ex.query = std::string(kQuestionHead) + ex.name + kQuestionTail;
  for (const auto& c : cand) {
    ex.query.push_back(' ');
    const auto begin = static_cast<int64_t>(ex.query.size());
    if (c == ex.answer) {
      ex.answer_begin = begin;
      ex.answer_candidate = static_cast<int64_t>(ex.candidates.size());
    }
    ex.query += c;
    ex.candidates.push_back({begin, static_cast<int64_t>(ex.query.size())});
  }
  ex.labels.assign(ex.query.size(), 0);
  for (size_t i = 0; i < ex.answer.size(); ++i) ex.labels[static_cast<size_t>(ex.answer_begin) + i] = 1;
}

int64_t qa_pick_candidate(const torch::Tensor& answer_prob, const QaExample& ex) {
  TORCH_CHECK(answer_prob.dim() == 1 && answer_prob.size(0) >= static_cast<int64_t>(ex.query.size()),
              "qa_pick_candidate: answer_prob must be [>= query length]");
  auto p = answer_prob.detach().to(torch::kCPU, torch::kFloat64);
  int64_t best = 0;
  double best_mean = -1;
  for (size_t c = 0; c < ex.candidates.size(); ++c) {
    const auto [b, e] = ex.candidates[c];
    const double mean = p.narrow(0, b, e - b).mean().item<double>();
    if (mean > best_mean) {
      best_mean = mean;
      best = static_cast<int64_t>(c);
    }
  }
  return best;
}

QaBatch QaTask::batch(QaSplit s, int64_t first, int64_t count, torch::Device device) const {
  if (first < 0 || count < 1 || first + count > size(s))
    throw std::out_of_range(std::string("qa ") + qa_split_name(s) + " batch " + std::to_string(first) + ".." +
                            std::to_string(first + count - 1) + " is out of range 0.." + std::to_string(size(s) - 1));
  std::vector<QaExample> ex;
  for (int64_t i = 0; i < count; ++i) ex.push_back(example(s, first + i));
  return batch(ex, device);
}

QaBatch QaTask::batch(const std::vector<QaExample>& examples, torch::Device device) const {
  TORCH_CHECK(!examples.empty(), "qa batch: no examples");
  const int64_t b = static_cast<int64_t>(examples.size()), l = opt_.chunk_len, nd = opt_.doc_chunks;
  int64_t nq = 1;
  for (const auto& e : examples) {
    TORCH_CHECK(static_cast<int64_t>(e.document.size()) <= nd * l, "qa batch: document longer than doc_chunks * chunk_len");
    nq = std::max<int64_t>(nq, (static_cast<int64_t>(e.query.size()) + l - 1) / l);
  }
  QaBatch out;
  out.size = b;
  for (int64_t c = 0; c < nd; ++c) out.reading.push_back(make_chunk(b, l, false));
  for (int64_t c = 0; c < nq; ++c) out.query.push_back(make_chunk(b, l, true));
  for (int64_t r = 0; r < b; ++r) {
    const auto& e = examples[static_cast<size_t>(r)];
    for (int64_t t = 0; t < static_cast<int64_t>(e.document.size()); ++t) {
      auto& in = out.reading[static_cast<size_t>(t / l)];
      const int64_t j = t % l;
      in.tokens.accessor<int64_t, 2>()[r][j] = static_cast<unsigned char>(e.document[static_cast<size_t>(t)]);
      in.valid.accessor<bool, 2>()[r][j] = true;
      auto off = in.offsets.accessor<int64_t, 3>();
      off[r][j][0] = t;
      off[r][j][1] = t + 1;
    }
    for (int64_t q = 0; q < static_cast<int64_t>(e.query.size()); ++q) {
      auto& in = out.query[static_cast<size_t>(q / l)];
      const int64_t j = q % l, p = nd * l + q;
      in.tokens.accessor<int64_t, 2>()[r][j] = static_cast<unsigned char>(e.query[static_cast<size_t>(q)]);
      in.valid.accessor<bool, 2>()[r][j] = true;
      auto off = in.offsets.accessor<int64_t, 3>();
      off[r][j][0] = p;
      off[r][j][1] = p + 1;
      in.targets.accessor<int64_t, 2>()[r][j] = e.labels[static_cast<size_t>(q)];
      in.target_valid.accessor<bool, 2>()[r][j] = true;
    }
  }
  for (auto& in : out.reading) to_device(in, device);
  for (auto& in : out.query) to_device(in, device);
  return out;
}

double QaTask::answer_share(int64_t n) const {
  n = std::min(n, opt_.train_size);
  if (n <= 0) throw std::invalid_argument("qa task: answer_share needs at least one train example");
  int64_t pos = 0, all = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto e = example(QaSplit::kTrain, i);
    for (auto y : e.labels) pos += y;
    all += static_cast<int64_t>(e.labels.size());
  }
  return static_cast<double>(pos) / static_cast<double>(all);
}

std::pair<double, double> QaTask::class_weights(int64_t n) const {
  const double p = answer_share(n);
  return {1.0 / (1.0 - p), 1.0 / p};
}

QaForward qa_forward(MemoryModelImpl& model, const QaBatch& batch) {
  TORCH_CHECK(!batch.query.empty(), "qa_forward: the batch has no query chunk");
  MemoryState mem = model.initial_memory(batch.size);
  if (!mem.empty()) {
    for (const auto& in : batch.reading) mem = model.step(in, mem, nullptr).memory;
  }
  torch::Tensor sum, count;
  std::vector<torch::Tensor> probs, labels, valid;
  for (const auto& in : batch.query) {
    SegmentOutput out = model.step(in, mem, nullptr);  // memory fixed: out.memory is dropped
    TORCH_CHECK(out.logits.defined() && out.logits.dim() == 3 && out.logits.size(-1) == 2,
                "qa_forward: the model must tag answers (logits [B, L, 2]); for MTN models call "
                "set_task with MtnTask::Kind::kAnswerTagging");
    TORCH_CHECK(out.loss_sum.defined() && out.loss_count.defined(), "qa_forward: the model computed no loss");
    sum = sum.defined() ? sum + out.loss_sum : out.loss_sum;
    count = count.defined() ? count + out.loss_count : out.loss_count;
    probs.push_back(torch::softmax(out.logits.detach(), -1).select(-1, 1));
    labels.push_back(in.targets);
    valid.push_back(in.target_valid.logical_and(in.valid));
  }
  QaForward r;
  r.loss = sum / count.detach().clamp_min(1e-12);
  r.answer_prob = torch::cat(probs, 1);
  r.labels = torch::cat(labels, 1);
  r.valid = torch::cat(valid, 1);
  return r;
}

// ---- the QA task as a TaskSource ----

namespace {

QaTaskOptions qa_options_of(const nlohmann::json& cfg) {
  if (!cfg.is_object()) throw ConfigError("config field 'task' must be a JSON object, got " + std::string(cfg.type_name()));
  nlohmann::json j = cfg;
  j.erase("name");
  int64_t segments = -1;
  if (j.contains("segments")) {
    if (!j["segments"].is_number_integer() || j["segments"].get<int64_t>() < 2)
      throw ConfigError("qa task option 'segments' = " + j["segments"].dump() +
                        " must be an integer >= 2 (doc_chunks reading chunks + 1 query chunk)");
    segments = j["segments"].get<int64_t>();
    j.erase("segments");
  }
  // The sizes default to the ones a training run needs (QaTaskOptions' are the CLI's old ones).
  if (!j.contains("train_size")) j["train_size"] = 100000;
  if (!j.contains("valid_size")) j["valid_size"] = 1024;
  if (!j.contains("test_size")) j["test_size"] = 1024;
  QaTaskOptions o = QaTaskOptions::from_json(j);
  if (segments > 0) {
    o.doc_chunks = segments - 1;
    o.validate();
  }
  if (o.train_size < 1 || o.valid_size < 1 || o.test_size < 1)
    throw ConfigError("qa task options 'train_size', 'valid_size' and 'test_size' must be >= 1");
  return o;
}

}  // namespace

QaTaskSource::QaTaskSource(const nlohmann::json& cfg) : task_(qa_options_of(cfg)) { weights_ = task_.class_weights(); }

nlohmann::json QaTaskSource::to_json() const {
  nlohmann::json j = task_.options().to_json();
  j["name"] = "qa";
  return j;
}

int64_t QaTaskSource::split_size(Split s) const {
  return task_.size(s == Split::kTrain ? QaSplit::kTrain : s == Split::kValid ? QaSplit::kValid : QaSplit::kTest);
}

TaskBatch QaTaskSource::batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const {
  const QaSplit qs = s == Split::kTrain ? QaSplit::kTrain : s == Split::kValid ? QaSplit::kValid : QaSplit::kTest;
  const int64_t n = task_.size(qs);
  std::vector<QaExample> ex;
  for (int64_t i : indices) ex.push_back(task_.example(qs, ((i % n) + n) % n));
  QaBatch qb = task_.batch(ex, torch::kCPU);
  TORCH_CHECK(qb.query.size() == 1, "qa task: the query must fit one chunk");
  if (qs == QaSplit::kTrain && task_.options().byte_label_warmup > 0) {
    // Label warm-up: the first byte_label_warmup train examples tag a city byte 1 when that
    // byte occurs in the document (QaTaskOptions::byte_label_warmup).
    auto ta = qb.query[0].targets.accessor<int64_t, 2>();
    for (size_t r = 0; r < ex.size(); ++r) {
      if (indices[r] >= task_.options().byte_label_warmup) continue;
      const auto& e = ex[r];
      for (const auto& [b, en] : e.candidates)
        for (int64_t j = b; j < en; ++j)
          ta[static_cast<int64_t>(r)][j] = e.document.find(e.query[static_cast<size_t>(j)]) != std::string::npos ? 1 : 0;
    }
  }
  const int64_t b = static_cast<int64_t>(ex.size()), l = task_.options().chunk_len;
  TaskBatch out;
  out.examples = b;
  for (auto& in : qb.reading) {
    // No loss while reading: targets defined but nowhere valid.
    in.targets = torch::zeros({b, l}, torch::kInt64);
    in.target_valid = torch::zeros({b, l}, torch::kBool);
    out.segments.push_back(in);
    out.scored.push_back(torch::zeros({b, l}, torch::kBool));
  }
  auto cand = torch::full({b, l}, int64_t{-1}, torch::kInt64);
  auto answer = torch::zeros({b}, torch::kInt64);
  auto scored = torch::zeros({b, l}, torch::kBool);
  auto ca = cand.accessor<int64_t, 2>();
  auto aa = answer.accessor<int64_t, 1>();
  auto sa = scored.accessor<bool, 2>();
  for (int64_t r = 0; r < b; ++r) {
    const auto& e = ex[static_cast<size_t>(r)];
    for (size_t c = 0; c < e.candidates.size(); ++c)
      for (int64_t j = e.candidates[c].first; j < e.candidates[c].second; ++j) {
        ca[r][j] = static_cast<int64_t>(c);
        sa[r][j] = true;
      }
    aa[r] = e.answer_candidate;
  }
  out.segments.push_back(qb.query[0]);
  out.scored.push_back(scored);
  out.memory_frozen_from = task_.options().doc_chunks;
  out.extra["qa.candidate"] = cand;
  out.extra["qa.answer_candidate"] = answer;
  for (auto& in : out.segments) {
    in.tokens = in.tokens.to(device);
    in.valid = in.valid.to(device);
    if (in.offsets.defined()) in.offsets = in.offsets.to(device);
    in.targets = in.targets.to(device);
    in.target_valid = in.target_valid.to(device);
  }
  for (auto& t : out.scored) t = t.to(device);
  return out;
}

void QaTaskSource::configure_model(MemoryModelImpl& model) const {
  auto* mtn = dynamic_cast<MtnImpl*>(&model);
  if (!mtn)
    throw ConfigError("task 'qa' tags answer bytes and needs an MTN-family model (model.model = mtn, mtn-naive or "
                      "no-memory), not '" + model.kind() + "'");
  mtn->set_task({MtnTask::Kind::kAnswerTagging, weights_.first, weights_.second});
}

void QaTaskSource::accumulate_metrics(const TaskBatch& batch, const std::vector<torch::Tensor>& logits,
                                      MetricSums& sums) const {
  const auto q = static_cast<size_t>(batch.memory_frozen_from);
  if (q >= logits.size() || !logits[q].defined()) return;
  auto p = torch::softmax(logits[q].detach().to(torch::kCPU, torch::kFloat64), -1).select(-1, 1);  // [B, L]
  const auto& in = batch.segments[q];
  auto labels = in.targets.to(torch::kCPU);
  auto valid = in.target_valid.logical_and(in.valid).to(torch::kCPU);
  auto cand = batch.extra.at("qa.candidate").to(torch::kCPU);
  auto answer = batch.extra.at("qa.answer_candidate").to(torch::kCPU);
  auto pa = p.accessor<double, 2>();
  auto la = labels.accessor<int64_t, 2>();
  auto va = valid.accessor<bool, 2>();
  auto ca = cand.accessor<int64_t, 2>();
  auto& choice = sums["choice_accuracy"];
  auto& recall = sums["recall"];
  auto& fpr = sums["fpr"];
  for (int64_t r = 0; r < p.size(0); ++r) {
    std::map<int64_t, std::pair<double, double>> per;  // candidate -> (sum P, bytes)
    for (int64_t j = 0; j < p.size(1); ++j) {
      if (!va[r][j]) continue;
      if (la[r][j]) {
        recall.first += pa[r][j];
        recall.second += 1;
      } else {
        fpr.first += pa[r][j];
        fpr.second += 1;
      }
      if (ca[r][j] >= 0) {
        per[ca[r][j]].first += pa[r][j];
        per[ca[r][j]].second += 1;
      }
    }
    // The pick of qa_pick_candidate: the largest mean P(answer), ties to the first.
    int64_t best = -1;
    double best_mean = -1;
    for (const auto& [c, v] : per)
      if (v.first / v.second > best_mean) {
        best_mean = v.first / v.second;
        best = c;
      }
    choice.first += best == answer.accessor<int64_t, 1>()[r] ? 1.0 : 0.0;
    choice.second += 1;
  }
}

std::map<std::string, double> QaTaskSource::finish_metrics(const MetricSums& sums) const {
  std::map<std::string, double> out = TaskSource::finish_metrics(sums);
  if (out.count("recall") && out.count("fpr")) {
    out["pseudo_precision"] = qa_precision(out["recall"], out["fpr"], 1.0);
    out["pseudo_f1"] = qa_f1(out["pseudo_precision"], out["recall"]);
  }
  return out;
}

}  // namespace mnemo
