// Data-set task kinds for the Trainer (core/data/tasks.h TaskSource): "mnist", "moby-dick"
// and "text" (any corpus, core/data/text_task.h). The task registry (task_kinds(),
// core/data/tasks.cpp) builds them by name.
//
// Both are language-modelling tasks over byte ids, and every SegmentInput serves both model
// families: decoder models (rmt, trxl, transformer, mtn, hashed variants) read tokens and the
// within-sequence targets/target_valid (target at flat position g = token g+1); Memformer
// reads tokens and predicts the next segment, next_tokens/next_valid. The loss is the mean
// cross-entropy over the predicted tokens; evaluation reports bits per token (MNIST: bits
// per pixel) and perplexity from it (core/train/lm_metrics.h).
//
// "mnist" {"name": "mnist", "segments": 8, "seed": 1}
//   Each image (core/data/mnist.h, its fixed split) is 784 grey-level tokens 0..255, row by
//   row, in S = segments segments of L = ceil(784 / S) tokens. The flat sequence is
//   z = [<bos> x L] ++ pixels ++ <pad> up to (S+1) L; segment t (t = 0..S-1) holds tokens
//   z[tL, (t+1)L) (step 0 = the <bos> segment, "start of image"), next_tokens z[(t+1)L,
//   (t+2)L): exactly mnist_rollout, so Memformer predicts all 784 pixels in S steps.
//   Decoders: targets[g] = z[g+1], valid where z[g+1] is a pixel, so they predict pixels
//   0 .. (S-1) L (with 784 = S L: all but the last L-1 pixels, which are only Memformer's
//   targets; the first prediction is made from <bos> tokens alone). valid is false on <pad>.
//   Examples of a split are its images in a fixed order shuffled with the seed (so a batch
//   mixes digits); example i is image perm[i mod size].
//
// "moby-dick" {"name": "moby-dick", "length": 256, "segments": 1, "seed": 1,
//              "valid_size": 0, "test_size": 0}
//   Character-level (byte) windows of the novel (core/data/moby_dick.h): training windows
//   come from the training chapters, valid / test windows from the held-out chapters (each
//   split's chapters joined with "\n\n"). L = length / segments (length must be a multiple of
//   segments). An example is a window w of (S+1) L bytes: segment t holds tokens
//   w[tL, (t+1)L), targets w[tL+1, (t+1)L+1) (all valid) and next_tokens w[(t+1)L, (t+2)L).
//   Training window i starts at a uniform offset drawn from (seed, i); valid / test window i
//   starts at (i mod size) * length, tiling the held-out text from its beginning;
//   valid_size / test_size > 0 cap the number of such windows (0 = all that fit).
//   The training split size is the number of non-overlapping windows in the training text.
//   The "text" task uses the same window layout (ByteWindowTask below).
//
// Missing data: the constructors load the cache (core/data/dataset_cache.h) and throw
// ConfigError "task 'mnist': dataset 'mnist' is not in the cache ... bash .ci/fetch-data
// mnist ..." when it is absent or damaged.
#pragma once
#include "core/data/mnist.h"
#include "core/data/moby_dick.h"
#include "core/data/task_fields.h"
#include "core/data/tasks.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mnemo {

// What the byte-window tasks ("moby-dick", "text") share: the fields length, segments,
// valid_size, test_size and seed, and the window layout described for "moby-dick" above.
class ByteWindowTask : public TaskSource {
 public:
  int64_t length() const override { return length_; }
  int64_t segments() const override { return segments_; }
  int64_t segment_len() const override { return length_ / segments_; }
  // Bytes of one window: (segments + 1) * segment_len.
  int64_t window_bytes() const { return length_ + segment_len(); }

 protected:
  // Reads the task object (read_task_fields; the keys in `handled` are the caller's) and checks
  // length 2..65536, segments 1..length dividing it, valid_size / test_size >= 0 (ConfigError
  // naming the field).
  void read_window_fields(const nlohmann::json& cfg, const std::string& kind, const std::vector<std::string>& handled = {});
  // The same fields written (write_task_fields): what to_json starts from.
  nlohmann::json write_window_fields(const std::string& kind) const;
  // Its fields for both (write_task_fields only reads them).
  std::vector<TaskField> window_fields();
  // `fit` windows, capped by valid_size / test_size for the held-out splits (0 = no cap).
  int64_t capped_split_size(Split s, int64_t fit) const;
  // The 64-bit number that places training window `index` of split `s` (uniform; the caller
  // takes it modulo the number of start positions).
  uint64_t draw(Split s, int64_t index) const;
  // A batch of indices.size() windows, window i filled with byte ids by fill(indices[i], window).
  TaskBatch window_batch(const std::vector<int64_t>& indices, torch::Device device,
                         const std::function<void(int64_t index, int64_t* window)>& fill) const;

  int64_t length_ = 256, segments_ = 1, valid_size_ = 0, test_size_ = 0;
  uint64_t seed_ = 1;
};

class MnistTask : public TaskSource {
 public:
  // Loads the cache unless `images` is given (tests pass a small set). ConfigError on a bad
  // field or missing data.
  explicit MnistTask(const nlohmann::json& cfg, const std::vector<MnistImage>* images = nullptr);
  std::string name() const override { return "mnist"; }
  nlohmann::json to_json() const override;
  int64_t length() const override { return kMnistPixels; }
  int64_t segments() const override { return segments_; }
  int64_t segment_len() const override { return len_; }
  int64_t split_size(Split s) const override;
  TaskBatch batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const override;
  // The image of example `index` of split `s`.
  const MnistImage& image(Split s, int64_t index) const;

 private:
  int64_t segments_ = 8, len_ = 98;
  uint64_t seed_ = 1;
  std::vector<TaskField> fields() { return {{"segments", &segments_, 1, kMnistPixels}}; }
  std::vector<MnistImage> split_[3];
  std::vector<int64_t> perm_[3];
};

class MobyDickTask : public ByteWindowTask {
 public:
  // Loads the cache unless `chapters` is given (tests pass fake chapters).
  explicit MobyDickTask(const nlohmann::json& cfg, const std::vector<MobyDickChapter>* chapters = nullptr);
  std::string name() const override { return "moby-dick"; }
  nlohmann::json to_json() const override;
  int64_t split_size(Split s) const override;
  TaskBatch batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const override;
  // First byte offset of example `index` of split `s` within that split's text.
  int64_t window_start(Split s, int64_t index) const;
  const std::vector<int64_t>& text(Split s) const { return text_[static_cast<int>(s)]; }

 private:
  std::vector<int64_t> text_[3];
};

}  // namespace mnemo
