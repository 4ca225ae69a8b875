#include "core/data/qa_task.h"

#include "core/data/qa_words.h"
#include "core/data/task_fields.h"
#include "core/data/tokenizer.h"

#include <algorithm>
#include <stdexcept>

namespace mnemo {

struct QaRng : SplitMix64 {
  using SplitMix64::SplitMix64;
};

namespace {

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

  const auto& nm = qa::names();
  const auto& ct = qa::cities();
  const int64_t nf = opt_.facts;
  auto who = rng.pick(static_cast<int64_t>(nm.size()), nf);
  auto where = rng.pick(static_cast<int64_t>(ct.size()), nf);

  // Sentences: the facts, then fillers while they fit, then shuffled.
  struct Sentence {
    std::string text;
    int64_t fact = -1;
  };
  const auto& fl = qa::fillers();
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
        if (fits(c, qa::fact(nm[who[f]], ct[where[f]]))) open.push_back(c);
      TORCH_CHECK(!open.empty(), "qa example: no room for a fact (validate() should have refused these options)");
      const int64_t c = open[static_cast<size_t>(rng.below(static_cast<int64_t>(open.size())))];
      chunk[c].push_back({qa::fact(nm[who[f]], ct[where[f]]), f});
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
    sent.push_back({qa::fact(nm[who[f]], ct[where[f]]), f});
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
  const auto& ct = qa::cities();
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
  ex.query = std::string(qa::kQuestionHead) + ex.name + qa::kQuestionTail;
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

std::string qa_stream(const QaExample& ex, const QaTaskOptions& opt) {
  std::string stream = ex.document;
  stream.resize(static_cast<size_t>(opt.doc_chunks * opt.chunk_len), ' ');
  return stream + ex.query;
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

}  // namespace mnemo
