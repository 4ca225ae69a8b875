#include "core/data/lm_tasks.h"

#include "core/data/task_fields.h"
#include "core/data/text_task.h"
#include "core/data/tokenizer.h"

#include <algorithm>

namespace mnemo {

namespace {

// Seeded Fisher-Yates permutation of 0..n-1.
std::vector<int64_t> shuffled(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
  uint64_t s = splitmix64(seed ^ 0xA5A5A5A5u);
  for (int64_t i = n - 1; i > 0; --i) {
    s = splitmix64(s);
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(s % static_cast<uint64_t>(i + 1))]);
  }
  return p;
}

int64_t wrap(int64_t index, int64_t n) { return ((index % n) + n) % n; }

// Segments of a [B, (S+1) L] flat batch: tokens/valid from z[0, SL), targets z[1, SL+1)
// (target_valid from `tvalid_of`), next_tokens/next_valid from z[L, (S+1) L).
TaskBatch flat_batch(const torch::Tensor& z, const torch::Tensor& zvalid, const torch::Tensor& tvalid, int64_t s,
                     int64_t l, torch::Device device) {
  // scored is left empty: the Trainer scores target_valid (decoders) or next_valid (Memformer).
  return cut_segments({z, zvalid, z.narrow(1, 1, s * l), tvalid, z.narrow(1, l, s * l), zvalid.narrow(1, l, s * l), {}},
                      s, l, device);
}

}  // namespace

void ByteWindowTask::read_window_fields(const nlohmann::json& cfg, const std::string& kind,
                                        const std::vector<std::string>& handled) {
  read_task_fields(cfg, kind, window_fields(), &seed_, handled);
  check_range("task.segments", segments_, 1, length_);
  if (length_ % segments_ != 0)
    throw field_error("task.length", "= " + std::to_string(length_) + " must be a multiple of 'task.segments' = " +
                                         std::to_string(segments_));
}

std::vector<TaskField> ByteWindowTask::window_fields() {
  return {{"length", &length_, 2, 65536},
          {"segments", &segments_, 1, 65536},
          {"valid_size", &valid_size_, 0, int64_t{1} << 40},
          {"test_size", &test_size_, 0, int64_t{1} << 40}};
}

nlohmann::json ByteWindowTask::write_window_fields(const std::string& kind) const {
  return write_task_fields(kind, const_cast<ByteWindowTask*>(this)->window_fields(), seed_);
}

int64_t ByteWindowTask::capped_split_size(Split s, int64_t fit) const {
  if (s == Split::kValid && valid_size_ > 0) return std::min(fit, valid_size_);
  if (s == Split::kTest && test_size_ > 0) return std::min(fit, test_size_);
  return fit;
}

uint64_t ByteWindowTask::draw(Split s, int64_t index) const {
  return splitmix64(splitmix64(seed_ * 0x100000001B3ull + static_cast<uint64_t>(s) + 0x5EEDu) ^
                    (static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ull));
}

TaskBatch ByteWindowTask::window_batch(const std::vector<int64_t>& indices, torch::Device device,
                                       const std::function<void(int64_t index, int64_t* window)>& fill) const {
  TORCH_CHECK(!indices.empty(), name(), " batch: no examples");
  const int64_t b = static_cast<int64_t>(indices.size()), l = segment_len(), w = window_bytes();
  auto z = torch::empty({b, w}, torch::kInt64);
  for (int64_t i = 0; i < b; ++i) fill(indices[static_cast<size_t>(i)], z.data_ptr<int64_t>() + i * w);
  auto ones = torch::ones({b, w}, torch::kBool);
  return flat_batch(z, ones, ones.narrow(1, 0, segments_ * l).contiguous(), segments_, l, device);
}

namespace {

template <class F>
auto with_data(const std::string& kind, F&& f) {
  try {
    return f();
  } catch (const DatasetError& e) {
    throw ConfigError("task '" + kind + "': " + e.what());
  }
}

}  // namespace

// ---- mnist ----

MnistTask::MnistTask(const nlohmann::json& cfg, const std::vector<MnistImage>* images) {
  read_task_fields(cfg, "mnist", fields(), &seed_);
  len_ = (kMnistPixels + segments_ - 1) / segments_;
  if ((segments_ - 1) * len_ >= kMnistPixels)
    throw field_error("task.segments", "= " + std::to_string(segments_) +
                                           " leaves the last segment of the 784 pixels empty; use fewer segments");
  std::vector<MnistImage> loaded;
  if (!images) loaded = with_data("mnist", [] { return load_mnist(); });
  const auto& all = images ? *images : loaded;
  for (int s = 0; s < 3; ++s) {
    split_[s] = mnist_subset(all, static_cast<Split>(s));
    perm_[s] = shuffled(static_cast<int64_t>(split_[s].size()), seed_ * 31 + static_cast<uint64_t>(s));
  }
}

nlohmann::json MnistTask::to_json() const {
  return write_task_fields("mnist", const_cast<MnistTask*>(this)->fields(), seed_);
}

int64_t MnistTask::split_size(Split s) const {
  return std::max<int64_t>(1, static_cast<int64_t>(split_[static_cast<int>(s)].size()));
}

const MnistImage& MnistTask::image(Split s, int64_t index) const {
  const auto& imgs = split_[static_cast<int>(s)];
  if (imgs.empty())
    throw ConfigError(std::string("task 'mnist': the ") + split_name(s) + " split has no images");
  return imgs[static_cast<size_t>(perm_[static_cast<int>(s)][static_cast<size_t>(wrap(index, split_size(s)))])];
}

TaskBatch MnistTask::batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const {
  TORCH_CHECK(!indices.empty(), "mnist batch: no examples");
  const int64_t b = static_cast<int64_t>(indices.size()), l = len_, n = segments_;
  auto z = torch::full({b, (n + 1) * l}, ByteTokenizer::kPad, torch::kInt64);
  z.narrow(1, 0, l).fill_(ByteTokenizer::kBos);
  auto za = z.accessor<int64_t, 2>();
  for (int64_t i = 0; i < b; ++i) {
    const auto& img = image(s, indices[static_cast<size_t>(i)]);
    for (int64_t p = 0; p < kMnistPixels; ++p) za[i][l + p] = img.pixels[static_cast<size_t>(p)];
  }
  auto zvalid = z.ne(ByteTokenizer::kPad);
  auto is_pixel = z.lt(256);
  auto tvalid = is_pixel.narrow(1, 1, n * l).contiguous();
  return flat_batch(z, zvalid, tvalid, n, l, device);
}

// ---- moby dick ----

MobyDickTask::MobyDickTask(const nlohmann::json& cfg, const std::vector<MobyDickChapter>* chapters) {
  read_window_fields(cfg, "moby-dick");
  std::vector<MobyDickChapter> loaded;
  if (!chapters) loaded = with_data("moby-dick", [] { return load_moby_dick(); });
  const auto& all = chapters ? *chapters : loaded;
  const int64_t need = length_ + segment_len();
  for (int s = 0; s < 3; ++s) {
    text_[s] = join_documents(moby_dick_documents(all, static_cast<Split>(s)));
    if (static_cast<int64_t>(text_[s].size()) < need)
      throw ConfigError(std::string("task 'moby-dick': the ") + split_name(static_cast<Split>(s)) + " text has " +
                        std::to_string(text_[s].size()) + " bytes, fewer than one window of " + std::to_string(need) +
                        " (length + length / segments); lower 'task.length'");
  }
}

nlohmann::json MobyDickTask::to_json() const { return write_window_fields("moby-dick"); }

int64_t MobyDickTask::split_size(Split s) const {
  const int64_t n = static_cast<int64_t>(text_[static_cast<int>(s)].size());
  return capped_split_size(s, (n - segment_len()) / length_);  // windows of length + L bytes at multiples of length
}

int64_t MobyDickTask::window_start(Split s, int64_t index) const {
  const int64_t need = length_ + segment_len();
  if (s == Split::kTrain) {
    const int64_t span = static_cast<int64_t>(text_[0].size()) - need + 1;
    return static_cast<int64_t>(draw(s, index) % static_cast<uint64_t>(span));
  }
  return wrap(index, split_size(s)) * length_;
}

TaskBatch MobyDickTask::batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const {
  const auto& text = text_[static_cast<int>(s)];
  return window_batch(indices, device, [&](int64_t index, int64_t* window) {
    std::copy_n(text.begin() + window_start(s, index), window_bytes(), window);
  });
}

}  // namespace mnemo
