#include "core/data/recall_tasks.h"

#include "core/data/task_fields.h"
#include "core/data/tokenizer.h"

#include <algorithm>

namespace mnemo {

namespace {

// The recall tasks' stream: next() = splitmix64(state after the increment), i.e. SplitMix64
// started one increment later (kept so that the zoo's test episodes stay the same).
struct Stream : SplitMix64 {
  explicit Stream(uint64_t seed) : SplitMix64(seed + 0x9E3779B97F4A7C15ull) {}
};

}  // namespace

RecallTask::RecallTask(const nlohmann::json& cfg) {
  if (!cfg.is_object()) throw field_error("task", "must be a JSON object, got " + std::string(cfg.type_name()));
  kind_ = cfg.at("name").get<std::string>();
  const bool copy = kind_ == "copy-recall";
  if (!copy) symbols_ = 26;
  read_task_fields(cfg, kind_, fields(), &seed_);
  if (copy) {
    if (segments_ < 2 * facts_ + 1)
      throw field_error("task.segments", "= " + std::to_string(segments_) + " leaves no distractor segment for " +
                                             std::to_string(facts_) + " facts (each is written once and asked once); "
                                             "use at least " + std::to_string(2 * facts_ + 1) + " segments");
    len_ = source_len_ + 1;
  } else {
    if (symbols_ < pairs_)
      throw field_error("task.symbols", "= " + std::to_string(symbols_) + " gives fewer keys than 'task.pairs' = " +
                                            std::to_string(pairs_) + "; raise symbols to at least " + std::to_string(pairs_));
    len_ = 2 * pairs_ + 1;
  }
}

std::vector<TaskField> RecallTask::fields() {
  const bool copy = kind_ == "copy-recall";
  std::vector<TaskField> f = {{"segments", &segments_, 3, 4096}};
  if (copy) {
    f.push_back({"source_len", &source_len_, 1, 1024});
    f.push_back({"facts", &facts_, 1, 64, 1});  // absent: 1 (configs written before the field)
  } else {
    f.push_back({"pairs", &pairs_, 1, 26});
  }
  f.insert(f.end(), {{"symbols", &symbols_, copy ? 2 : 1, 26},
                     {"train_size", &sizes_[0], 1, int64_t{1} << 40},
                     {"valid_size", &sizes_[1], 1, int64_t{1} << 40},
                     {"test_size", &sizes_[2], 1, int64_t{1} << 40}});
  return f;
}

nlohmann::json RecallTask::to_json() const {
  return write_task_fields(kind_, const_cast<RecallTask*>(this)->fields(), seed_);
}

int64_t RecallTask::split_size(Split s) const { return sizes_[static_cast<int>(s)]; }

double RecallTask::chance() const { return kind_ == "copy-recall" ? 1.0 / static_cast<double>(symbols_) : 0.1; }

TaskExample RecallTask::example(Split s, int64_t index) const {
  const int64_t n = split_size(s);
  index = ((index % n) + n) % n;
  const uint64_t base = splitmix64(splitmix64(seed_ * 0x100000001B3ull + static_cast<uint64_t>(s) * 0x9E3779B1ull + 0xC0FFEEu) ^
                            (static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ull));
  Stream facts(base);                 // information and question: independent of the segment count
  Stream noise(splitmix64(base ^ 0x5A5A5A5Aull));  // distractors
  std::string info, question;
  std::vector<uint8_t> question_scored;
  std::vector<std::string> more;  // copy-recall: facts 2..F
  if (kind_ == "copy-recall") {
    for (int64_t i = 0; i < source_len_; ++i) info.push_back(static_cast<char>('a' + facts.uniform(0, symbols_ - 1)));
    question = info;
    question_scored.assign(question.size(), 1);
    for (int64_t f = 1; f < facts_; ++f) {
      more.emplace_back();
      for (int64_t i = 0; i < source_len_; ++i) more.back().push_back(static_cast<char>('a' + facts.uniform(0, symbols_ - 1)));
    }
  } else {
    std::string letters;
    for (int64_t i = 0; i < symbols_; ++i) letters.push_back(static_cast<char>('a' + i));
    for (int64_t i = 0; i < pairs_; ++i)  // partial Fisher-Yates: distinct keys
      std::swap(letters[static_cast<size_t>(i)], letters[static_cast<size_t>(facts.uniform(i, symbols_ - 1))]);
    std::vector<char> values;
    for (int64_t i = 0; i < pairs_; ++i) {
      values.push_back(static_cast<char>('0' + facts.uniform(0, 9)));
      info.push_back(letters[static_cast<size_t>(i)]);
      info.push_back(values.back());
    }
    std::vector<int64_t> order(static_cast<size_t>(pairs_));
    for (int64_t i = 0; i < pairs_; ++i) order[static_cast<size_t>(i)] = i;
    for (int64_t i = pairs_ - 1; i > 0; --i)
      std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(facts.uniform(0, i))]);
    for (int64_t i : order) {
      question.push_back(letters[static_cast<size_t>(i)]);
      question.push_back(values[static_cast<size_t>(i)]);
      question_scored.push_back(0);
      question_scored.push_back(1);
    }
  }
  TaskExample ex;
  auto put = [&](char c, bool scored) {
    ex.ids.push_back(static_cast<unsigned char>(c));
    ex.target.push_back(scored);
    ex.scored.push_back(scored);
  };
  const int64_t n_facts = 1 + static_cast<int64_t>(more.size());
  put('>', false);
  for (char c : info) put(c, false);
  for (const auto& m : more) {
    put('>', false);
    for (char c : m) put(c, false);
  }
  for (int64_t t = n_facts; t + n_facts < segments_; ++t) {
    put('.', false);
    for (int64_t j = 1; j < len_; ++j) put(static_cast<char>('A' + noise.uniform(0, 25)), false);
  }
  put(kQueryMark, false);
  for (size_t j = 0; j < question.size(); ++j) put(question[j], question_scored[j] != 0);
  for (const auto& m : more) {
    put(kQueryMark, false);
    for (char c : m) put(c, true);
  }
  TORCH_CHECK(static_cast<int64_t>(ex.ids.size()) == length(), "recall example has ", ex.ids.size(), " tokens, expected ",
              length());
  return ex;
}

TaskBatch RecallTask::batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const {
  TORCH_CHECK(!indices.empty(), "RecallTask::batch: no examples");
  const int64_t b = static_cast<int64_t>(indices.size()), l = len_, n = segments_, total = n * l;
  // One extra all-padding segment: the next segment of the last one (no loss there).
  auto z = torch::full({b, total + l}, ByteTokenizer::kPad, torch::kInt64);
  auto zvalid = torch::zeros({b, total + l}, torch::kBool);
  auto zscored = torch::zeros({b, total + l}, torch::kBool);
  auto zp = z.accessor<int64_t, 2>();
  auto vp = zvalid.accessor<bool, 2>();
  auto sp = zscored.accessor<bool, 2>();
  for (int64_t i = 0; i < b; ++i) {
    TaskExample ex = example(s, indices[static_cast<size_t>(i)]);
    for (int64_t g = 0; g < total; ++g) {
      zp[i][g] = ex.ids[static_cast<size_t>(g)];
      vp[i][g] = true;
      sp[i][g] = ex.scored[static_cast<size_t>(g)] != 0;
    }
  }
  // Within-sequence targets: position g predicts token g+1 (valid where g+1 is scored).
  auto targets = z.narrow(1, 1, total);
  auto tvalid = zscored.narrow(1, 1, total);
  return cut_segments({z, zvalid, targets, tvalid, z.narrow(1, l, total), zscored.narrow(1, l, total), tvalid}, n, l,
                      device);
}

}  // namespace mnemo
