#include "core/data/mnist.h"

#include "core/data/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace mnemo {

namespace {
const char* kMnistName = "mnist";
}  // namespace

std::vector<std::array<uint8_t, kMnistPixels>> parse_mnist_digit_json(const std::string& text,
                                                                       const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw DatasetError("MNIST file " + source + " is corrupt (not valid JSON: " + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array())
    throw DatasetError("MNIST file " + source + " is corrupt: expected {\"data\": [...]}");
  const auto& data = j["data"];
  if (data.empty() || data.size() % kMnistPixels != 0)
    throw DatasetError("MNIST file " + source + " is corrupt: " + std::to_string(data.size()) +
                       " values is not a positive multiple of 784 (28x28 pixels per image)");
  std::vector<std::array<uint8_t, kMnistPixels>> images(data.size() / kMnistPixels);
  size_t i = 0;
  for (const auto& v : data) {
    if (!v.is_number())
      throw DatasetError("MNIST file " + source + " is corrupt: value " + std::to_string(i) + " is " + v.dump() +
                         ", not a number");
    const double x = v.get<double>();
    if (!(x >= 0.0 && x <= 1.0))
      throw DatasetError("MNIST file " + source + " is corrupt: value " + std::to_string(i) + " = " + v.dump() +
                         " is outside [0, 1]");
    images[i / kMnistPixels][i % kMnistPixels] = static_cast<uint8_t>(std::lround(x * 255.0));
    ++i;
  }
  return images;
}

std::vector<MnistImage> load_mnist(const std::string& package_dir) {
  const std::string pkg = package_dir.empty() ? dataset_package_dir(kMnistName) : package_dir;
  std::vector<MnistImage> out;
  for (int64_t d = 0; d < 10; ++d) {
    const std::string path = pkg + "/src/digits/" + std::to_string(d) + ".json";
    std::vector<std::array<uint8_t, kMnistPixels>> imgs;
    try {
      imgs = parse_mnist_digit_json(read_dataset_file(path, kMnistName, pkg), path);
    } catch (const DatasetError& e) {
      const std::string what = e.what();
      if (what.find("fetch-data") != std::string::npos) throw;
      throw DatasetError(what + "; " + dataset_fix_hint(kMnistName, pkg));
    }
    for (size_t i = 0; i < imgs.size(); ++i) {
      MnistImage m;
      m.digit = d;
      m.index = static_cast<int64_t>(i);
      m.pixels = imgs[i];
      out.push_back(m);
    }
  }
  return out;
}

Split mnist_split_of(int64_t index_in_digit) {
  const int64_t r = index_in_digit % 10;
  return r == 0 ? Split::kTest : r == 1 ? Split::kValid : Split::kTrain;
}

std::vector<MnistImage> mnist_subset(const std::vector<MnistImage>& all, Split split) {
  std::vector<MnistImage> out;
  for (const auto& m : all)
    if (mnist_split_of(m.index) == split) out.push_back(m);
  return out;
}

torch::Tensor mnist_tokens(const std::vector<const MnistImage*>& batch) {
  TORCH_CHECK(!batch.empty(), "mnist_tokens: empty batch");
  auto t = torch::empty({static_cast<int64_t>(batch.size()), kMnistPixels}, torch::kInt64);
  auto a = t.accessor<int64_t, 2>();
  for (size_t b = 0; b < batch.size(); ++b)
    for (int64_t p = 0; p < kMnistPixels; ++p) a[static_cast<int64_t>(b)][p] = batch[b]->pixels[static_cast<size_t>(p)];
  return t;
}

std::vector<SegmentInput> mnist_rollout(const torch::Tensor& tokens, int64_t segment_len) {
  TORCH_CHECK(tokens.dim() == 2 && tokens.size(1) == kMnistPixels, "mnist_rollout: tokens must be [B, 784], got ",
              tokens.sizes());
  TORCH_CHECK(segment_len >= 1 && segment_len <= kMnistPixels, "mnist_rollout: segment_len must be in 1..784, got ",
              segment_len);
  const int64_t b = tokens.size(0), l = segment_len;
  const int64_t s = (kMnistPixels + l - 1) / l;
  auto opts = torch::TensorOptions().dtype(torch::kInt64).device(tokens.device());
  // Padded to S*L pixels; padding is masked.
  auto padded = torch::full({b, s * l}, ByteTokenizer::kPad, opts);
  padded.narrow(1, 0, kMnistPixels).copy_(tokens);
  auto valid = torch::zeros({b, s * l}, opts.dtype(torch::kBool));
  valid.narrow(1, 0, kMnistPixels).fill_(true);
  std::vector<SegmentInput> steps;
  for (int64_t t = 0; t < s; ++t) {
    SegmentInput in;
    if (t == 0) {
      in.tokens = torch::full({b, l}, ByteTokenizer::kBos, opts);
      in.valid = torch::ones({b, l}, opts.dtype(torch::kBool));
    } else {
      in.tokens = padded.narrow(1, (t - 1) * l, l).contiguous();
      in.valid = valid.narrow(1, (t - 1) * l, l).contiguous();
    }
    in.next_tokens = padded.narrow(1, t * l, l).contiguous();
    in.next_valid = valid.narrow(1, t * l, l).contiguous();
    steps.push_back(std::move(in));
  }
  return steps;
}

}  // namespace mnemo
