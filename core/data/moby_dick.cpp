#include "core/data/moby_dick.h"

#include "core/io/json_file.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace mnemo {

namespace {
const char* kMobyDickName = "moby-dick";
}  // namespace

MobyDickChapter parse_moby_dick_chapter_json(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = mnemo::io::parse_json(text);
  } catch (const nlohmann::json::exception& e) {
    throw DatasetError("Moby Dick file " + source + " is corrupt (not valid JSON: " + e.what() + ")");
  }
  auto bad = [&](const std::string& why) {
    return DatasetError("Moby Dick file " + source + " is corrupt: " + why);
  };
  if (!j.is_object()) throw bad("expected a JSON object {\"chapter\", \"title\", \"text\"}");
  for (const char* k : {"chapter", "title", "text"})
    if (!j.contains(k) || !j[k].is_string()) throw bad(std::string("field '") + k + "' is missing or not a string");
  MobyDickChapter c;
  const std::string num = j["chapter"].get<std::string>();
  try {
    size_t used = 0;
    c.number = std::stoll(num, &used);
    if (used != num.size()) throw std::invalid_argument(num);
  } catch (const std::exception&) {
    throw bad("field 'chapter' = \"" + num + "\" is not a chapter number");
  }
  c.title = j["title"].get<std::string>();
  c.text = j["text"].get<std::string>();
  if (c.text.empty()) throw bad("field 'text' is empty");
  return c;
}

std::vector<MobyDickChapter> load_moby_dick(const std::string& package_dir) {
  const std::string pkg = package_dir.empty() ? dataset_package_dir(kMobyDickName) : package_dir;
  std::vector<MobyDickChapter> out;
  for (int64_t n = 1; n <= kMobyDickChapters; ++n) {
    const std::string path = pkg + "/data/chapter_" + std::to_string(n) + ".json";
    out.push_back(with_fix_hint(kMobyDickName, pkg, [&] {
      MobyDickChapter c = parse_moby_dick_chapter_json(read_dataset_file(path, kMobyDickName, pkg), path);
      if (c.number != n)
        throw DatasetError("Moby Dick file " + path + " is corrupt: it holds chapter " + std::to_string(c.number));
      return c;
    }));
  }
  return out;
}

Split moby_dick_split_of(int64_t chapter) { return split_by_last_digit(chapter); }

Document moby_dick_document(const MobyDickChapter& c) {
  return make_document("CHAPTER " + std::to_string(c.number) + ". " + c.title + "\n\n" + c.text,
                       "moby-dick/chapter_" + std::to_string(c.number));
}

std::vector<Document> moby_dick_documents(const std::vector<MobyDickChapter>& chapters, Split split) {
  std::vector<Document> out;
  for (const auto& c : chapters)
    if (moby_dick_split_of(c.number) == split) out.push_back(moby_dick_document(c));
  return out;
}

std::vector<int64_t> join_documents(const std::vector<Document>& docs) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (i > 0) {
      ids.push_back('\n');
      ids.push_back('\n');
    }
    const auto d = docs[i].ids();
    ids.insert(ids.end(), d.begin(), d.end());
  }
  return ids;
}

SegmentStream::SegmentStream(const std::vector<int64_t>& tokens, int64_t batch, int64_t segment_len)
    : batch_(batch), len_(segment_len) {
  if (batch < 1 || segment_len < 1) throw std::invalid_argument("segment stream: batch and segment_len must be >= 1");
  const int64_t per_stream = static_cast<int64_t>(tokens.size()) / batch;
  const int64_t segs = per_stream / segment_len;
  if (segs < 2)
    throw std::invalid_argument("segment stream: " + std::to_string(tokens.size()) + " tokens are too few for " +
                                std::to_string(batch) + " streams of at least 2 segments of " +
                                std::to_string(segment_len) + " tokens");
  num_steps_ = segs - 1;
  const int64_t n = segs * segment_len;
  streams_ = torch::empty({batch, n}, torch::kInt64);
  auto a = streams_.accessor<int64_t, 2>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) a[b][i] = tokens[static_cast<size_t>(b * per_stream + i)];
}

std::vector<SegmentInput> SegmentStream::steps(int64_t first, int64_t count) const {
  std::vector<SegmentInput> out;
  for (int64_t s = std::max<int64_t>(first, 0); s < std::min(first + count, num_steps_); ++s) {
    SegmentInput in;
    in.tokens = streams_.narrow(1, s * len_, len_).contiguous();
    in.valid = torch::ones({batch_, len_}, torch::kBool);
    in.next_tokens = streams_.narrow(1, (s + 1) * len_, len_).contiguous();
    in.next_valid = torch::ones({batch_, len_}, torch::kBool);
    out.push_back(std::move(in));
  }
  return out;
}

}  // namespace mnemo
