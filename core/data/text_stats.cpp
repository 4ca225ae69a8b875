#include "core/data/text_stats.h"

#include "core/data/task_fields.h"
#include "core/data/text_task.h"

#include <algorithm>
#include <cstdio>

namespace mnemo {

namespace {

constexpr uint64_t kBase = 0x100000001B3ull;  // the rolling hash's base (odd)

uint64_t base_power() {
  uint64_t p = 1;
  for (int i = 0; i < kPassageLen - 1; ++i) p *= kBase;
  return p;
}

// Calls f(id) for each sampled passage of text.
template <class F>
void for_each_passage(std::string_view text, F&& f) {
  if (static_cast<int64_t>(text.size()) < kPassageLen) return;
  static const uint64_t top = base_power();
  uint64_t h = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i >= static_cast<size_t>(kPassageLen))
      h -= top * static_cast<unsigned char>(text[i - kPassageLen]);
    h = h * kBase + static_cast<unsigned char>(text[i]);
    if (i + 1 < static_cast<size_t>(kPassageLen)) continue;
    const uint64_t m = splitmix64(h);
    if (m % kPassageSample == 0) f(static_cast<uint32_t>(m >> 32));
  }
}

bool is_control(unsigned char c) { return (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') || c == 0x7F; }

}  // namespace

std::vector<uint32_t> sample_passages(std::string_view text) {
  std::vector<uint32_t> out;
  for_each_passage(text, [&](uint32_t id) { out.push_back(id); });
  return out;
}

void TrainingTextStats::add(std::string_view text) {
  for (unsigned char c : text) ++byte_counts[c];
  bytes += static_cast<int64_t>(text.size());
  for_each_passage(text, [&](uint32_t id) { passages.push_back(id); });
}

void TrainingTextStats::finish() {
  std::sort(passages.begin(), passages.end());
  passages.erase(std::unique(passages.begin(), passages.end()), passages.end());
}

bool TrainingTextStats::has_passage(uint32_t id) const { return std::binary_search(passages.begin(), passages.end(), id); }

nlohmann::json TrainingTextStats::to_json() const {
  std::string hex;
  hex.reserve(passages.size() * 8);
  char buf[9];
  for (uint32_t p : passages) {
    std::snprintf(buf, sizeof buf, "%08x", p);
    hex += buf;
  }
  return {{"bytes", bytes}, {"byte_counts", byte_counts}, {"passage_len", kPassageLen},
          {"passage_sample", kPassageSample}, {"passages", hex}};
}

TrainingTextStats TrainingTextStats::from_json(const nlohmann::json& j) {
  auto bad = [](const std::string& why) { return ConfigError("the model's training_text metadata is damaged: " + why); };
  if (!j.is_object()) throw bad("not an object");
  TrainingTextStats s;
  if (!j.contains("bytes") || !j["bytes"].is_number_integer() || j["bytes"].get<int64_t>() < 0)
    throw bad("'bytes' is not a count");
  s.bytes = j["bytes"].get<int64_t>();
  if (!j.contains("byte_counts") || !j["byte_counts"].is_array() || j["byte_counts"].size() != 256)
    throw bad("'byte_counts' is not a list of 256 counts");
  for (size_t i = 0; i < 256; ++i) {
    const auto& v = j["byte_counts"][i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) throw bad("'byte_counts' holds a value that is not a count");
    s.byte_counts[i] = v.get<int64_t>();
  }
  if (j.value("passage_len", 0) != kPassageLen || j.value("passage_sample", uint64_t{0}) != kPassageSample)
    throw bad("passages of another length or sampling (this version reads " + std::to_string(kPassageLen) + " / " +
              std::to_string(kPassageSample) + ")");
  if (!j.contains("passages") || !j["passages"].is_string()) throw bad("'passages' is not a string");
  const std::string& hex = j["passages"].get_ref<const std::string&>();
  if (hex.size() % 8 != 0) throw bad("'passages' is not a whole number of 8-digit ids");
  s.passages.reserve(hex.size() / 8);
  for (size_t i = 0; i < hex.size(); i += 8) {
    uint32_t v = 0;
    for (size_t k = 0; k < 8; ++k) {
      const char c = hex[i + k];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) throw bad("'passages' holds a character that is not a hex digit");
      v = v << 4 | static_cast<uint32_t>(d);
    }
    s.passages.push_back(v);
  }
  if (!std::is_sorted(s.passages.begin(), s.passages.end())) throw bad("'passages' is not sorted");
  return s;
}

TrainingTextStats training_text_stats(const TextTask& task) {
  TrainingTextStats s;
  const TextCorpus& c = task.corpus();
  std::vector<int64_t> ids;
  std::string text;
  for (const auto& r : c.ranges(Split::kTrain)) {
    // In blocks, so that a long document is never held whole; passages across a block boundary
    // are sampled by carrying the last kPassageLen - 1 bytes into the next block.
    constexpr int64_t kBlock = int64_t{1} << 20;
    std::string carry;
    for (int64_t b = r.begin; b < r.end; b += kBlock) {
      const int64_t n = std::min(kBlock, r.end - b);
      ids.resize(static_cast<size_t>(n));
      c.read(r.doc, b, n, ids.data());
      text.assign(carry);
      for (int64_t v : ids) text.push_back(static_cast<char>(v));
      for (int64_t v : ids) ++s.byte_counts[static_cast<size_t>(v)];
      s.bytes += n;
      for_each_passage(text, [&](uint32_t id) { s.passages.push_back(id); });
      const size_t keep = std::min(text.size(), static_cast<size_t>(kPassageLen - 1));
      carry = text.substr(text.size() - keep);
    }
  }
  s.finish();
  return s;
}

std::string byte_name(int value) {
  char buf[32];
  if (value == '\t') return "'\\t' (0x09)";
  if (value == '\n') return "'\\n' (0x0A)";
  if (value == '\r') return "'\\r' (0x0D)";
  if (value > 0x20 && value < 0x7F) std::snprintf(buf, sizeof buf, "'%c' (0x%02X)", value, value);
  else std::snprintf(buf, sizeof buf, "0x%02X", value);
  return buf;
}

DocumentCheck check_document(const Document& doc, const TrainingTextStats* stats) {
  DocumentCheck k;
  k.bytes = doc.size();
  std::array<int64_t, 256> counts{};
  int64_t control = 0;
  // One pass over the document: byte counts, and (against statistics) its sampled passages,
  // carrying the tail of each chunk so that passages across chunk boundaries are sampled too.
  std::string carry, text;
  doc.scan([&](std::string_view chunk, int64_t) {
    for (unsigned char c : chunk) {
      ++counts[c];
      control += is_control(c);
    }
    if (!stats) return;
    text.assign(carry);
    text.append(chunk);
    for_each_passage(text, [&](uint32_t id) {
      ++k.passages;
      k.in_training += stats->has_passage(id);
    });
    const size_t keep = std::min(text.size(), static_cast<size_t>(kPassageLen - 1));
    carry = text.substr(text.size() - keep);
  });
  k.control_fraction = k.bytes ? static_cast<double>(control) / static_cast<double>(k.bytes) : 0.0;
  k.not_text = doc.looks_binary() || k.control_fraction > 0.10;
  if (stats) {
    k.checked_bytes = true;
    for (int v = 0; v < 256; ++v)
      if (counts[static_cast<size_t>(v)] > 0 && stats->byte_counts[static_cast<size_t>(v)] == 0) {
        k.unseen += counts[static_cast<size_t>(v)];
        k.unseen_values.push_back({v, counts[static_cast<size_t>(v)]});
      }
    for (int v = 0; v < 256; ++v) {
      const int64_t n = counts[static_cast<size_t>(v)], t = stats->byte_counts[static_cast<size_t>(v)];
      if (t == 0 || n < 10 || stats->bytes == 0) continue;
      const double here = static_cast<double>(n) / static_cast<double>(k.bytes),
                   there = static_cast<double>(t) / static_cast<double>(stats->bytes);
      if (here >= 0.005 && here >= 50.0 * there) {
        k.rare_values.push_back({v, here, there});
        k.rare += n;
      }
    }
    std::stable_sort(k.rare_values.begin(), k.rare_values.end(),
                     [](const auto& a, const auto& b) { return a.here > b.here; });
    std::stable_sort(k.unseen_values.begin(), k.unseen_values.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    if (k.unseen_values.size() > 8) k.unseen_values.resize(8);
  }
  return k;
}

std::vector<std::string> DocumentCheck::warnings() const {
  std::vector<std::string> out;
  char buf[256];
  if (not_text) {
    std::snprintf(buf, sizeof buf,
                  "this document is mostly not text (%s%.0f %% control bytes): a language model's bits per byte on "
                  "it say nothing about how it reads",
                  control_fraction > 0.10 ? "" : "NUL bytes or invalid UTF-8; ", 100.0 * control_fraction);
    out.push_back(buf);
  }
  if (!checked_bytes) {
    out.push_back("the model carries no statistics of its training text: whether this document holds bytes it never "
                  "saw, or overlaps its training text, was not checked");
    return out;
  }
  if (unseen > 0) {
    std::string which;
    for (const auto& [v, n] : unseen_values) which += (which.empty() ? "" : ", ") + byte_name(v) + " x" + std::to_string(n);
    std::snprintf(buf, sizeof buf, "%lld of its %lld bytes (%.2f %%) are byte values the model never saw in training",
                  static_cast<long long>(unseen), static_cast<long long>(bytes),
                  100.0 * static_cast<double>(unseen) / static_cast<double>(std::max<int64_t>(1, bytes)));
    out.push_back(std::string(buf) + " (" + which + (unseen_values.size() == 8 ? ", ..." : "") +
                  "): it predicts them badly and what follows them less well");
  }
  if (rare > 0) {
    std::string which;
    for (const auto& r : rare_values) {
      std::snprintf(buf, sizeof buf, "%s (%.2f %% of this document, %.4f %% of the training text)", byte_name(r.value).c_str(),
                    100.0 * r.here, 100.0 * r.training);
      which += (which.empty() ? "" : ", ") + std::string(buf);
    }
    out.push_back(std::to_string(rare) + " of its bytes are values the model rarely saw in training: " + which +
                  "; it predicts them badly");
  }
  if (passages >= 4 && overlap() >= 0.5) {
    std::snprintf(buf, sizeof buf,
                  "this document overlaps the model's training text (%lld of %lld sampled 64-byte passages are in "
                  "it): its scores here are not those of unseen text",
                  static_cast<long long>(in_training), static_cast<long long>(passages));
    out.push_back(buf);
  }
  return out;
}

nlohmann::json DocumentCheck::to_json() const {
  nlohmann::json u = nlohmann::json::array();
  for (const auto& [v, n] : unseen_values) u.push_back({{"byte", v}, {"count", n}});
  nlohmann::json j = {{"bytes", bytes}, {"not_text", not_text}, {"control_fraction", control_fraction},
                      {"checked_against_training_text", checked_bytes}, {"warnings", warnings()}};
  if (checked_bytes) {
    j["unseen_bytes"] = unseen;
    j["unseen_values"] = u;
    nlohmann::json rv = nlohmann::json::array();
    for (const auto& r : rare_values) rv.push_back({{"byte", r.value}, {"share", r.here}, {"share_in_training", r.training}});
    j["rare_bytes"] = rare;
    j["rare_values"] = rv;
    j["passages"] = passages;
    j["passages_in_training_text"] = in_training;
  }
  return j;
}

}  // namespace mnemo
