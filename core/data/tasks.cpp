#include "core/data/tasks.h"

#include "core/data/lm_tasks.h"
#include "core/data/qa_task.h"
#include "core/data/recall_tasks.h"
#include "core/data/task_fields.h"
#include "core/data/text_task.h"
#include "core/data/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace mnemo {

namespace {

using Rng = SplitMix64;

uint64_t example_seed(uint64_t seed, Split s, int64_t index) {
  Rng r(seed * 0x100000001B3ull + static_cast<uint64_t>(s) * 0x9E3779B1ull + 0x51ED27u);
  uint64_t a = r.next();
  Rng q(a ^ (static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ull));
  return q.next();
}

std::string signed_term(int64_t v, const char* suffix) {
  return (v < 0 ? "-" : "+") + std::to_string(v < 0 ? -v : v) + suffix;
}

int64_t isqrt(int64_t v) {
  auto r = static_cast<int64_t>(std::sqrt(static_cast<double>(v)));
  while (r * r > v) --r;
  while ((r + 1) * (r + 1) <= v) ++r;
  return r;
}

void append(TaskExample& ex, const std::string& s, bool target, bool scored) {
  for (unsigned char ch : s) {
    ex.ids.push_back(ch);
    ex.target.push_back(target);
    ex.scored.push_back(scored);
  }
}

}  // namespace

const char* split_name(Split s) {
  switch (s) {
    case Split::kTrain: return "train";
    case Split::kValid: return "valid";
    case Split::kTest: return "test";
  }
  return "?";
}

Split split_by_last_digit(int64_t n) {
  const int64_t r = n % 10;
  return r == 0 ? Split::kTest : r == 5 ? Split::kValid : Split::kTrain;
}

Split parse_split(const std::string& name, const std::string& field) {
  if (name == "train") return Split::kTrain;
  if (name == "valid") return Split::kValid;
  if (name == "test") return Split::kTest;
  throw ConfigError(field + " '" + name + "' is not a split; use train, valid or test");
}

const std::vector<std::string>& TaskConfig::known_tasks() {
  static const std::vector<std::string> k = {"copy", "reverse", "assoc", "quadratic"};
  return k;
}

const ConfigFields<TaskConfig>& TaskConfig::fields() {
  using T = TaskConfig;
  constexpr int64_t many = int64_t{1} << 40;
  static const ConfigFields<TaskConfig> table(
      "task.", {int_field("source_len", &T::source_len, 1, 4096, "copy / reverse: source symbols"),
                int_field("symbols", &T::symbols, 2, 26, "copy / reverse: alphabet size, letters from 'a'"),
                int_field("pairs", &T::pairs, 1, 26, "assoc: key-value pairs"),
                int_field("segments", &T::segments, 1, 4096, "the example is split into this many segments"),
                int_field("step_width", &T::step_width, 28, 256, "quadratic: characters per step"),
                int_field("train_size", &T::train_size, 1, many, "distinct train examples"),
                int_field("valid_size", &T::valid_size, 1, many, "distinct valid examples"),
                int_field("test_size", &T::test_size, 1, many, "distinct test examples"),
                seed_field("seed", &T::seed, "the examples' generator")});
  return table;
}

void TaskConfig::validate() const {
  const auto& k = known_tasks();
  if (std::find(k.begin(), k.end(), name) == k.end())
    throw field_error("task.name", "= '" + name + "' is not a task; known: " + join_names(k));
  fields().validate(*this);
  if (name == "assoc" && pairs > symbols)
    throw field_error("task.pairs", "= " + std::to_string(pairs) + " needs as many distinct keys: raise " +
                                        "'task.symbols' (= " + std::to_string(symbols) + ") to at least " +
                                        std::to_string(pairs));
}

nlohmann::json TaskConfig::to_json() const {
  nlohmann::json j = fields().to_json(*this);
  j["name"] = name;
  return j;
}

TaskConfig TaskConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw field_error("task", "must be a JSON object, got " + std::string(j.type_name()));
  TaskConfig c;
  if (j.contains("name")) {
    if (!j["name"].is_string()) throw field_error("task.name", "must be a string, got " + j["name"].dump());
    c.name = j["name"].get<std::string>();
  }
  fields().read(c, j, {{"name"}, " for task '" + c.name + "'"});
  c.validate();
  return c;
}

namespace {
std::vector<TaskKind>& task_registry() {
  static std::vector<TaskKind> r = [] {
    std::vector<TaskKind> k;
    for (const auto& name : TaskConfig::known_tasks())
      k.push_back({name, [](const nlohmann::json& t) { return std::make_shared<Task>(TaskConfig::from_json(t)); },
                   TaskData::kGenerated});
    k.push_back({"mnist", [](const nlohmann::json& t) { return std::make_shared<MnistTask>(t); }, TaskData::kDataSet});
    k.push_back({"moby-dick", [](const nlohmann::json& t) { return std::make_shared<MobyDickTask>(t); },
                 TaskData::kDataSet});
    k.push_back({"text", [](const nlohmann::json& t) { return std::make_shared<TextTask>(t); }, TaskData::kDataSet});
    for (const char* name : {"copy-recall", "assoc-recall"})
      k.push_back({name, [](const nlohmann::json& t) { return std::make_shared<RecallTask>(t); }, TaskData::kGenerated});
    k.push_back({"qa", [](const nlohmann::json& t) { return std::make_shared<QaTaskSource>(t); }, TaskData::kOther});
    return k;
  }();
  return r;
}
}  // namespace

const std::vector<TaskKind>& task_kinds() { return task_registry(); }

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const auto& k : task_registry()) names.push_back(k.name);
  return names;
}

const TaskKind* find_task_kind(const std::string& name) {
  for (const auto& k : task_registry())
    if (k.name == name) return &k;
  return nullptr;
}

void register_task_kind(const std::string& name, TaskMaker maker, TaskData data) {
  for (auto& k : task_registry())
    if (k.name == name) {
      k.make = std::move(maker);
      k.data = data;
      return;
    }
  task_registry().push_back({name, std::move(maker), data});
}

std::shared_ptr<TaskSource> make_task(const nlohmann::json& task) {
  if (!task.is_object()) throw field_error("task", "must be a JSON object, got " + std::string(task.type_name()));
  if (!task.contains("name") || !task["name"].is_string())
    throw field_error("task.name", "is missing or not a string; e.g. \"name\": \"copy\"");
  const std::string name = task["name"].get<std::string>();
  if (const TaskKind* k = find_task_kind(name)) return k->make(task);
  throw field_error("task.name", "= '" + name + "' is not a task; known: " + join_names(task_names()));
}

TaskHead trained_task_head(const nlohmann::json& task) {
  if (task.is_object() && task.contains("name") && task["name"] == "qa") return QaTaskSource(task).head();
  return {};
}

std::map<std::string, double> TaskSource::finish_metrics(const MetricSums& sums) const {
  std::map<std::string, double> out;
  for (const auto& [k, v] : sums) out[k] = v.second > 0 ? v.first / v.second : std::nan("");
  return out;
}

std::string TaskExample::text() const {
  std::string s;
  for (int64_t id : ids) s.push_back(static_cast<char>(id));
  return s;
}

std::vector<std::string> quadratic_steps(bool has_roots, int64_t x1, int64_t x2, int64_t b, int64_t c, int64_t alpha) {
  if (has_roots) {
    b = -(x1 + x2);
    c = x1 * x2;
  }
  const std::string lead = alpha == 1 ? "x^2" : std::to_string(alpha) + "*x^2";
  std::vector<std::string> s;
  s.push_back(lead + signed_term(alpha * b, "*x") + signed_term(alpha * c, "") + "=0");
  s.push_back("x^2" + signed_term(b, "*x") + signed_term(c, "") + "=0");
  const int64_t d = b * b - 4 * c;
  std::string ds = "D=" + std::to_string(b < 0 ? -b : b) + "^2-4*1*" + std::to_string(c) + "=" + std::to_string(d);
  if (!has_roots) {
    s.push_back(ds + "<0");
    s.push_back("");
    s.push_back("");
    s.push_back("none");
    return s;
  }
  const int64_t r = isqrt(d);
  s.push_back(ds + "=" + std::to_string(r) + "^2");
  s.push_back("x=(" + std::to_string(-b) + "-" + std::to_string(r) + ")/2=" + std::to_string(x1));
  s.push_back("x=(" + std::to_string(-b) + "+" + std::to_string(r) + ")/2=" + std::to_string(x2));
  s.push_back(std::to_string(x1) + "," + std::to_string(x2));
  return s;
}

Task::Task(TaskConfig cfg) : cfg_(std::move(cfg)) {
  cfg_.validate();
  if (cfg_.name == "copy") length_ = 3 * cfg_.source_len + 1;
  else if (cfg_.name == "reverse") length_ = 2 * cfg_.source_len + 1;
  else if (cfg_.name == "assoc") length_ = 2 * cfg_.pairs + 3;
  else length_ = 6 * cfg_.step_width;
  if (cfg_.segments > length_)
    throw field_error("task.segments", "= " + std::to_string(cfg_.segments) + " exceeds the example length " +
                      std::to_string(length_));
  if ((cfg_.segments - 1) * segment_len() >= length_)
    throw field_error("task.segments", "= " + std::to_string(cfg_.segments) + " leaves the last segment "
                      "empty for examples of " + std::to_string(length_) + " tokens; use fewer segments");
}

int64_t Task::segment_len() const { return (length_ + cfg_.segments - 1) / cfg_.segments; }

int64_t Task::split_size(Split s) const {
  switch (s) {
    case Split::kTrain: return cfg_.train_size;
    case Split::kValid: return cfg_.valid_size;
    case Split::kTest: return cfg_.test_size;
  }
  return 1;
}

TaskExample Task::example(Split s, int64_t index) const {
  const int64_t n = split_size(s);
  index = ((index % n) + n) % n;
  Rng rng(example_seed(cfg_.seed, s, index));
  TaskExample ex;
  if (cfg_.name == "copy" || cfg_.name == "reverse") {
    std::string src;
    for (int64_t i = 0; i < cfg_.source_len; ++i) src.push_back(static_cast<char>('a' + rng.uniform(0, cfg_.symbols - 1)));
    append(ex, src + kStartToGenerate, false, false);
    if (cfg_.name == "copy") {
      append(ex, src + src, true, true);
    } else {
      append(ex, std::string(src.rbegin(), src.rend()), true, true);
    }
  } else if (cfg_.name == "assoc") {
    std::string letters;
    for (int64_t i = 0; i < cfg_.symbols; ++i) letters.push_back(static_cast<char>('a' + i));
    for (int64_t i = 0; i < cfg_.pairs; ++i)  // partial Fisher-Yates: distinct keys
      std::swap(letters[static_cast<size_t>(i)], letters[static_cast<size_t>(rng.uniform(i, cfg_.symbols - 1))]);
    std::string pairs, values;
    for (int64_t i = 0; i < cfg_.pairs; ++i) {
      values.push_back(static_cast<char>('0' + rng.uniform(0, 9)));
      pairs.push_back(letters[static_cast<size_t>(i)]);
      pairs.push_back(values.back());
    }
    const auto q = static_cast<size_t>(rng.uniform(0, cfg_.pairs - 1));
    append(ex, pairs + kQueryMark + letters[q], false, false);
    append(ex, std::string(1, values[q]), true, true);
  } else {  // quadratic
    const int64_t alpha = rng.uniform(1, 10);
    const bool no_roots = rng.uniform(0, 4) == 0;  // 20%
    std::vector<std::string> steps;
    if (no_roots) {
      const int64_t b = rng.uniform(-199, 199);
      const int64_t c = rng.uniform(b * b / 4 + 1, 10000);
      steps = quadratic_steps(false, 0, 0, b, c, alpha);
    } else {
      int64_t x1 = rng.uniform(-100, 100), x2 = rng.uniform(-100, 100);
      if (x1 > x2) std::swap(x1, x2);
      steps = quadratic_steps(true, x1, x2, 0, 0, alpha);
    }
    for (size_t i = 0; i < steps.size(); ++i) {
      TORCH_CHECK(static_cast<int64_t>(steps[i].size()) <= cfg_.step_width, "quadratic step '", steps[i],
                  "' is longer than step_width ", cfg_.step_width);
      std::string padded = steps[i] + std::string(static_cast<size_t>(cfg_.step_width) - steps[i].size(), ' ');
      append(ex, padded, i > 0, i + 1 == steps.size());
    }
  }
  TORCH_CHECK(static_cast<int64_t>(ex.ids.size()) == length_, "task example has ", ex.ids.size(), " tokens, expected ",
              length_);
  return ex;
}

TaskBatch Task::batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const {
  std::vector<TaskExample> ex;
  ex.reserve(indices.size());
  for (int64_t i : indices) ex.push_back(example(s, i));
  return make_batch(ex, device);
}

TaskBatch Task::make_batch(const std::vector<TaskExample>& examples, torch::Device device) const {
  TORCH_CHECK(!examples.empty(), "make_batch: no examples");
  const int64_t b = static_cast<int64_t>(examples.size()), ls = segment_len(), n = cfg_.segments;
  const int64_t total = ls * n;
  auto tokens = torch::full({b, total}, ByteTokenizer::kPad, torch::kInt64);
  auto valid = torch::zeros({b, total}, torch::kBool);
  auto targets = torch::full({b, total}, ByteTokenizer::kPad, torch::kInt64);
  auto tvalid = torch::zeros({b, total}, torch::kBool);
  auto scored = torch::zeros({b, total}, torch::kBool);
  auto tk = tokens.accessor<int64_t, 2>();
  auto va = valid.accessor<bool, 2>();
  auto tg = targets.accessor<int64_t, 2>();
  auto tv = tvalid.accessor<bool, 2>();
  auto sc = scored.accessor<bool, 2>();
  for (int64_t i = 0; i < b; ++i) {
    const auto& ex = examples[static_cast<size_t>(i)];
    TORCH_CHECK(static_cast<int64_t>(ex.ids.size()) == length_, "make_batch: example of ", ex.ids.size(),
                " tokens, the task has ", length_);
    for (int64_t g = 0; g < length_; ++g) {
      tk[i][g] = ex.ids[static_cast<size_t>(g)];
      va[i][g] = true;
      if (g + 1 < length_) {
        tg[i][g] = ex.ids[static_cast<size_t>(g + 1)];
        tv[i][g] = ex.target[static_cast<size_t>(g + 1)] != 0;
        sc[i][g] = ex.scored[static_cast<size_t>(g + 1)] != 0;
      }
    }
  }
  return cut_segments({tokens, valid, targets, tvalid, {}, {}, scored}, n, ls, device);
}

TaskBatch cut_segments(const FlatBatch& f, int64_t n, int64_t l, torch::Device device) {
  TORCH_CHECK(f.tokens.defined() && f.tokens.dim() == 2, "cut_segments: tokens must be [B, >= n * l]");
  auto cut = [&](const torch::Tensor& x, int64_t t) {
    return x.defined() ? x.narrow(1, t * l, l).contiguous().to(device) : torch::Tensor();
  };
  TaskBatch out;
  out.examples = f.tokens.size(0);
  for (int64_t t = 0; t < n; ++t) {
    SegmentInput in;
    in.tokens = cut(f.tokens, t);
    in.valid = cut(f.valid, t);
    in.targets = cut(f.targets, t);
    in.target_valid = cut(f.target_valid, t);
    in.next_tokens = cut(f.next_tokens, t);
    in.next_valid = cut(f.next_valid, t);
    out.segments.push_back(std::move(in));
    if (f.scored.defined()) out.scored.push_back(cut(f.scored, t));
  }
  return out;
}

namespace {
// Tasks that generate their episodes in one layout (no corpus or data set to read).
bool generated_task(const std::string& name) {
  const TaskKind* k = find_task_kind(name);
  return k && k->data == TaskData::kGenerated;
}
}  // namespace

std::vector<uint8_t> episode_scored_tokens(const TaskSource& task, int64_t doc_tokens) {
  if (!generated_task(task.name()) || doc_tokens < 1) return {};
  // Token g + 1 is scored when the prediction at position g is (TaskBatch::scored); one layout
  // for every episode: the first few test episodes agree token by token, all of them valid.
  constexpr int64_t kEpisodes = 8;
  std::vector<int64_t> idx(kEpisodes);
  for (int64_t i = 0; i < kEpisodes; ++i) idx[static_cast<size_t>(i)] = i;
  const TaskBatch b = task.batch(Split::kTest, idx, torch::kCPU);
  if (b.scored.size() != b.segments.size()) return {};
  auto scored = torch::cat(b.scored, 1).to(torch::kBool).contiguous();                // [B, T]
  std::vector<torch::Tensor> v;
  for (const auto& s : b.segments) v.push_back(s.valid.defined() ? s.valid : torch::ones_like(s.tokens, torch::kBool));
  auto valid = torch::cat(v, 1).to(torch::kBool).contiguous();
  const int64_t total = scored.size(1);
  if (doc_tokens > total || !valid.narrow(1, 0, doc_tokens).all().item<bool>()) return {};
  if (!scored.eq(scored[0].unsqueeze(0)).all().item<bool>()) return {};
  auto first = scored[0];
  const bool* p = first.data_ptr<bool>();
  std::vector<uint8_t> out(static_cast<size_t>(doc_tokens), 0);
  for (int64_t g = 0; g + 1 < doc_tokens; ++g) out[static_cast<size_t>(g + 1)] = p[g] ? 1 : 0;
  return out;
}

std::vector<uint8_t> episode_scored_tokens(const nlohmann::json& task, int64_t doc_tokens) {
  if (!task.is_object() || !task.contains("name") || !task["name"].is_string()) return {};
  if (!generated_task(task["name"].get<std::string>())) return {};
  try {
    return episode_scored_tokens(*make_task(task), doc_tokens);
  } catch (const std::exception&) {
    return {};  // a config this build cannot read: no positions to name
  }
}

int64_t task_segment_len(const nlohmann::json& task) {
  try {
    if (!task.is_object() || !task.contains("name") || !task["name"].is_string()) return 0;
    const std::string name = task["name"].get<std::string>();
    auto field = [&](const char* k) -> int64_t {
      if (!task.contains(k) || !task[k].is_number_integer()) return 0;
      return task[k].get<int64_t>();
    };
    // Tasks that read a corpus or a dataset when built: their segment length from the fields
    // (core/data/lm_tasks.h, text_task.h, qa_task.h); a checkpoint records every field.
    if (name == "text" || name == "moby-dick") {
      const int64_t len = field("length"), segs = field("segments");
      return (len > 0 && segs > 0 && len % segs == 0) ? len / segs : 0;
    }
    if (name == "mnist") {
      const int64_t segs = field("segments");
      return segs > 0 ? (784 + segs - 1) / segs : 0;  // ceil(784 pixels / segments)
    }
    if (name == "qa") return field("chunk_len");
    // The synthetic tasks generate examples on demand: building one costs nothing.
    return make_task(task)->segment_len();
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace mnemo
