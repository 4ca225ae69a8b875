#include "core/data/mnist.h"

#include "core/data/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

namespace mnemo {

namespace {
const char* kMnistName = "mnist";
}  // namespace

namespace {
// A SAX reader of {"data": [numbers]}: the numbers go straight to grey levels, with no JSON
// tree of the file's 627,000-889,000 numbers in memory (building that tree took about four
// fifths of loading MNIST). It reports what the tree-based reader did, in the same order of
// precedence: not JSON; no "data" array; a count that is not a positive multiple of 784; the
// first value that is not a number in [0, 1]. Like a JSON object, a later "data" key replaces
// an earlier one; other keys are ignored.
class DigitReader {
 public:
  using json = nlohmann::json;
  explicit DigitReader(std::vector<uint8_t>& out) : out_(out) {}

  bool null() { return other("null"); }
  bool boolean(bool b) { return other(b ? "true" : "false"); }
  bool number_integer(json::number_integer_t v) { return number(v); }
  bool number_unsigned(json::number_unsigned_t v) { return number(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return number(v); }
  bool string(json::string_t& v) { return other(json(v).dump()); }
  bool binary(json::binary_t&) { return other("binary"); }
  bool start_object(std::size_t) {
    if (depth_ == 0) top_object_ = true;
    return open(false);
  }
  bool start_array(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    if (depth_ == 1 && (data_key_ = k == "data")) {  // a repeated key replaces the earlier value
      has_data_ = false;
      out_.clear();
      count_ = 0;
      bad_index_ = -1;
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

  const std::string& parse_error_text() const { return error_; }
  bool has_data() const { return top_object_ && has_data_; }
  int64_t count() const { return count_; }
  int64_t bad_index() const { return bad_index_; }
  const std::string& bad_value() const { return bad_value_; }
  bool bad_range() const { return bad_range_; }

 private:
  // True for an element of the data array (depth 2, under key "data" of the top object). Any
  // value of a top-level key ends that key's turn.
  bool element() {
    if (depth_ == 1) data_key_ = false;
    return depth_ == 2 && data_open_;
  }
  bool open(bool array) {
    if (depth_ == 1 && data_key_ && array) has_data_ = data_open_ = true;
    if (element()) bad(array ? "an array" : "an object", false);
    ++depth_;
    return true;
  }
  bool close() {
    if (--depth_ == 1) data_open_ = false;
    return true;
  }
  bool other(const std::string& text) {
    if (element()) bad(text, false);
    return true;
  }
  template <class T>
  bool number(T v) {
    if (!element()) return true;
    const double x = static_cast<double>(v);
    if (!(x >= 0.0 && x <= 1.0)) return bad(json(v).dump(), true);  // written only for the message
    out_.push_back(static_cast<uint8_t>(std::lround(x * 255.0)));
    ++count_;
    return true;
  }
  // An element that is not a grey level: the first is named in the error.
  bool bad(const std::string& text, bool range) {
    if (bad_index_ < 0) {
      bad_index_ = count_;
      bad_value_ = text;
      bad_range_ = range;
    }
    ++count_;
    return true;
  }

  std::vector<uint8_t>& out_;
  int depth_ = 0;
  bool top_object_ = false, data_key_ = false, data_open_ = false, has_data_ = false, bad_range_ = false;
  int64_t count_ = 0, bad_index_ = -1;
  std::string bad_value_, error_;
};
}  // namespace

std::vector<std::array<uint8_t, kMnistPixels>> parse_mnist_digit_json(const std::string& text,
                                                                       const std::string& source) {
  std::vector<uint8_t> levels;
  levels.reserve(text.size() / 3);
  DigitReader reader(levels);
  if (!nlohmann::json::sax_parse(text, &reader))
    throw DatasetError("MNIST file " + source + " is corrupt (not valid JSON: " + reader.parse_error_text() + ")");
  if (!reader.has_data()) throw DatasetError("MNIST file " + source + " is corrupt: expected {\"data\": [...]}");
  const int64_t n = reader.count();
  if (n == 0 || n % kMnistPixels != 0)
    throw DatasetError("MNIST file " + source + " is corrupt: " + std::to_string(n) +
                       " values is not a positive multiple of 784 (28x28 pixels per image)");
  if (reader.bad_index() >= 0)
    throw DatasetError("MNIST file " + source + " is corrupt: value " + std::to_string(reader.bad_index()) +
                       (reader.bad_range() ? " = " + reader.bad_value() + " is outside [0, 1]"
                                           : " is " + reader.bad_value() + ", not a number"));
  std::vector<std::array<uint8_t, kMnistPixels>> images(static_cast<size_t>(n / kMnistPixels));
  for (size_t i = 0; i < images.size(); ++i)
    std::memcpy(images[i].data(), levels.data() + i * kMnistPixels, kMnistPixels);
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
