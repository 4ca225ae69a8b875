// Synthetic algorithmic tasks of the RMT paper (Recurrent Memory Transformer (docs/references.md#rmt) §4,
// App. A.1–A.3), character level over the byte tokenizer, deterministic under a seed.
//
// Every example is one character sequence, input then target, written as plain bytes so a
// sample can be saved as a text file and stepped through (`mnemoscope step --doc`):
//   copy       "<src>><src><src>"            src = source_len symbols from a.., '>' starts generation
//   reverse    "<src>><reversed src>"
//   assoc      "k1v1k2v2..kNvN?k" + "v"       N pairs (distinct letter keys, digit values), one key
//                                            queried; the target is its value
//   quadratic  six steps, each padded with spaces to step_width (default 30, App. A.3):
//              equation | monic equation | discriminant | root 1 | root 2 | answer
//              e.g. "-4*x^2+392*x-2208=0" then "x^2-98*x+552=0", "D=98^2-4*1*552=7396=86^2",
//              "x=(98-86)/2=6", "x=(98+86)/2=92", "6,92"; without real roots (20%):
//              "D=4^2-4*1*13=-36<0", two empty root steps and the answer "none".
//              The target is every step after the equation; only the answer step is scored.
// The loss covers the target only. The sequence is split into `segments` segments of
// ceil(length / segments) tokens (the last padded with <pad>, masked).
// Example i of a split is a pure function of (seed, split, i mod split size), so data never
// needs storing and a resumed run sees the same batches.
//
// The Trainer sees any data set through TaskSource; make_task() builds one from the "task"
// object of a training config by its name, looked up in the task registry (task_kinds()
// below): the synthetic tasks here, the data sets "mnist", "moby-dick" and "text"
// (core/data/lm_tasks.h, text_task.h), the memory tasks "copy-recall" and "assoc-recall"
// (core/data/recall_tasks.h), the MTN QA task "qa" (core/data/qa_task.h), and any kind
// registered with register_task_kind().
#pragma once
#include "core/errors.h"
#include "core/io/config_fields.h"
#include "core/data/segment.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mnemo {

enum class Split { kTrain = 0, kValid = 1, kTest = 2 };
const char* split_name(Split s);
// "train" | "valid" | "test"; throws ConfigError naming `field` otherwise.
Split parse_split(const std::string& name, const std::string& field = "split");
// The data sets' fixed split by a number (chapter, year): n % 10 == 0 test, n % 10 == 5 valid,
// else train.
Split split_by_last_digit(int64_t n);

struct TaskConfig {
  std::string name = "copy";  // copy | reverse | assoc | quadratic
  int64_t source_len = 24;    // copy / reverse: source symbols (1..4096)
  int64_t symbols = 10;       // copy / reverse: alphabet size, letters from 'a' (2..26)
  int64_t pairs = 4;          // assoc: key-value pairs (1..26)
  int64_t segments = 1;       // the example is split into this many segments (1..4096)
  int64_t step_width = 30;    // quadratic: characters per step (28..256)
  int64_t train_size = 100000, valid_size = 5000, test_size = 10000;  // distinct examples per split
  uint64_t seed = 1;

  // The kinds this struct and class Task generate (copy, reverse, assoc, quadratic); the task
  // registry registers each of them.
  static const std::vector<std::string>& known_tasks();
  // The field table of every member but `name` (prefix "task."); core/data/tasks.cpp.
  static const ConfigFields<TaskConfig>& fields();
  // Throws ConfigError naming the field ("task.<field>") and the allowed range.
  void validate() const;
  nlohmann::json to_json() const;
  // Unknown keys are rejected.
  static TaskConfig from_json(const nlohmann::json& j);
};

inline constexpr char kStartToGenerate = '>';
inline constexpr char kQueryMark = '?';

struct TaskExample {
  std::vector<int64_t> ids;       // input then target, byte ids
  std::vector<uint8_t> target;    // 1 on target positions (the loss)
  std::vector<uint8_t> scored;    // 1 on positions scored by accuracy / exact match (within target)
  std::string text() const;       // the bytes as a string
};

// One batch, ready for run_rollout.
struct TaskBatch {
  std::vector<SegmentInput> segments;  // tokens/valid/targets/target_valid [B, Ls]
  std::vector<torch::Tensor> scored;   // per segment [B, Ls] bool: target_valid positions that are scored
  int64_t examples = 0;
  // From this segment on the memory is read but not updated: every later segment sees the
  // memory after segment memory_frozen_from - 1 (the QA task's inference phase, papers'
  // "memory fixed while answering"). -1: memory flows through every segment.
  int64_t memory_frozen_from = -1;
  // Per-example tensors a task's own metrics need (e.g. the QA task's candidate spans).
  std::map<std::string, torch::Tensor> extra;
};

// A batch laid out flat, each tensor [B, >= n * l]: segment t of the TaskBatch takes columns
// [t * l, (t + 1) * l) of every tensor given (an undefined one leaves that SegmentInput field,
// or TaskBatch::scored, undefined / empty), moved to `device`. What every task's batch() cuts.
struct FlatBatch {
  torch::Tensor tokens, valid, targets, target_valid, next_tokens, next_valid, scored;
};
TaskBatch cut_segments(const FlatBatch& f, int64_t n, int64_t l, torch::Device device);

// Task-specific metric sums: name -> (sum, count); the value is sum / count unless the
// task's finish_metrics derives it otherwise.
using MetricSums = std::map<std::string, std::pair<double, double>>;

// What the Trainer trains and evaluates on. Batches must be deterministic in (split, indices).
// Scoring: position j of segment t is scored when scored[t][j]; its prediction is the argmax
// of the model's logits there and its target is in.targets (or in.next_tokens for models that
// predict the next segment, like Memformer).
class TaskSource {
 public:
  virtual ~TaskSource() = default;
  virtual std::string name() const = 0;
  virtual nlohmann::json to_json() const = 0;  // the normalised "task" config
  virtual int64_t length() const = 0;          // tokens per example (for tokens/s)
  virtual int64_t segments() const = 0;        // segments per example
  virtual int64_t segment_len() const = 0;     // tokens per segment; model.segment_len must be >= this
  virtual int64_t split_size(Split s) const = 0;
  virtual TaskBatch batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const = 0;

  // Hooks for tasks that need more than loss / accuracy / exact match (defaults: nothing).
  // The output head the task needs, for MemoryModelImpl::set_task_head on a freshly built
  // model (training, eval, the GUI): e.g. the QA task asks for answer tagging with its class
  // weights. Default: language modelling.
  virtual TaskHead head() const { return {}; }
  // Adds this batch's sums; logits[t] = segment t's logits (undefined where none).
  virtual void accumulate_metrics(const TaskBatch& batch, const std::vector<torch::Tensor>& logits,
                                  MetricSums& sums) const {}
  // The final values by name (default: sum / count of each).
  virtual std::map<std::string, double> finish_metrics(const MetricSums& sums) const;
  // What the task skipped or could not use, one line each, for the user (e.g. the "text"
  // task's skipped binary files); `train` prints them. Default: none.
  virtual std::vector<std::string> warnings() const { return {}; }
};

// The task registry: every task kind a "task" object may name, with its maker and what it
// reads. make_task(), its unknown-name message and every list of task names are derived from
// it. The built-in kinds come first, in this order: copy, reverse, assoc, quadratic (Task),
// mnist, moby-dick, text (core/data/lm_tasks.h, text_task.h), copy-recall, assoc-recall
// (core/data/recall_tasks.h), qa (core/data/qa_task.h); then the kinds register_task_kind()
// added, in the order added. The registry is built on first use, so it works whatever the
// static-initialisation order.
using TaskMaker = std::function<std::shared_ptr<TaskSource>(const nlohmann::json& task)>;
enum class TaskData {
  kGenerated,  // episodes generated from the seed, one layout for all of them (the synthetic and recall tasks)
  kDataSet,    // reads a data set or a corpus (mnist, moby-dick, text)
  kOther,      // neither (qa: generated documents whose layout varies; a kind registered without saying)
};
struct TaskKind {
  std::string name;
  TaskMaker make;
  TaskData data = TaskData::kOther;
};
const std::vector<TaskKind>& task_kinds();
// The registry's names, in its order.
std::vector<std::string> task_names();
// The kind named `name`; nullptr when there is none.
const TaskKind* find_task_kind(const std::string& name);
// Registers a task kind, or replaces the kind of that name (keeping its place); call before
// loading configs (not thread-safe).
void register_task_kind(const std::string& name, TaskMaker maker, TaskData data = TaskData::kOther);

// Builds the task of a training config's "task" object from its "name", a kind of the
// registry. Throws ConfigError naming the field; an unknown name's message lists task_names().
std::shared_ptr<TaskSource> make_task(const nlohmann::json& task);
// The output head a checkpoint's model was trained with, from its training config's "task":
// the task's own head for a task that tags tokens (qa: answer tagging, so the app steps an
// mtn-qa model as trained and traces qa.answer_prob), the language-model head otherwise
// (no data set is opened). Throws ConfigError for a malformed qa task.
TaskHead trained_task_head(const nlohmann::json& task);

class Task : public TaskSource {
 public:
  // Validates the config (ConfigError).
  explicit Task(TaskConfig cfg);
  const TaskConfig& config() const { return cfg_; }
  std::string name() const override { return cfg_.name; }
  nlohmann::json to_json() const override { return cfg_.to_json(); }
  int64_t length() const override { return length_; }  // tokens per example (all examples alike)
  int64_t segments() const override { return cfg_.segments; }
  int64_t segment_len() const override;                // ceil(length / segments)
  int64_t split_size(Split s) const override;
  // Example `index` (taken mod split_size) of split `s`.
  TaskExample example(Split s, int64_t index) const;
  // Batch of the examples `indices` of split `s`. Target at position g = token g+1 (the next
  // token), valid where token g+1 is a target position.
  TaskBatch batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const override;
  TaskBatch batch(Split s, const std::vector<int64_t>& indices) const { return batch(s, indices, torch::kCPU); }
  // Batch from explicit examples (all of this task's length).
  TaskBatch make_batch(const std::vector<TaskExample>& examples, torch::Device device = torch::kCPU) const;

 private:
  TaskConfig cfg_;
  int64_t length_ = 0;
};

// Tokens per segment of the training task `task` (a training config's "task" object, as a
// checkpoint records it: task.segments is the curriculum's count at that step). 0 when it
// cannot be told without reading the task's data (an unknown task, missing fields). Builds
// no data: the byte-window and dataset tasks are computed from their fields.
int64_t task_segment_len(const nlohmann::json& task);

// The tokens a generated task scores, for a document of `doc_tokens` tokens stepped from its
// start: 1 on each token the task scores in every one of its episodes (a copy's recalled
// symbols; never a random source symbol or a distractor). Only a generated task (copy,
// reverse, assoc, quadratic) whose episodes all share one layout has such positions, and only
// for a document no longer than an episode (a prefix of it); otherwise empty: every token
// counts (a text or data-set task, a layout that moves, a longer document). The first form
// takes a training config's "task" object (as a checkpoint records it) and builds no data.
std::vector<uint8_t> episode_scored_tokens(const nlohmann::json& task, int64_t doc_tokens);
std::vector<uint8_t> episode_scored_tokens(const TaskSource& task, int64_t doc_tokens);

// The quadratic generator's pieces, exposed for tests: the six step strings (unpadded) of
// the equation with roots x1 <= x2 and factor alpha (real roots), or of alpha*(x^2 + b x + c)
// with b^2 < 4c (no real roots: pass has_roots = false and b, c).

std::vector<std::string> quadratic_steps(bool has_roots, int64_t x1, int64_t x2, int64_t b, int64_t c, int64_t alpha);

}  // namespace mnemo
