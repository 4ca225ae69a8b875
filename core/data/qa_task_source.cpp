#include "core/data/qa_task.h"

#include "core/data/qa_metrics.h"

namespace mnemo {

namespace {

QaTaskOptions qa_options_of(const nlohmann::json& cfg) {
  if (!cfg.is_object()) throw field_error("task", "must be a JSON object, got " + std::string(cfg.type_name()));
  QaTaskOptions o;
  // The sizes default to the ones a training run needs (QaTaskOptions' are the CLI's old ones).
  o.train_size = 100000;
  o.valid_size = 1024;
  o.test_size = 1024;
  QaTaskOptions::fields().read(o, cfg, {{"name", "segments"}, " for task 'qa'"});
  if (cfg.contains("segments")) {
    const auto& v = cfg["segments"];
    if (!v.is_number_integer() || v.get<int64_t>() < 2)
      throw field_error("task.segments",
                        "= " + v.dump() + " must be an integer >= 2 (doc_chunks reading chunks + 1 query chunk)");
    o.doc_chunks = v.get<int64_t>() - 1;
  }
  o.validate();
  for (const auto& [name, size] : {std::pair<const char*, int64_t>{"train_size", o.train_size},
                                   {"valid_size", o.valid_size},
                                   {"test_size", o.test_size}})
    check_range(std::string("task.") + name, size, 1, int64_t{1} << 40);
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

TaskHead QaTaskSource::head() const {
  return {TaskHead::Kind::kAnswerTagging, weights_.first, weights_.second, name()};
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
