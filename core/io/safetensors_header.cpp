// The safetensors header without LibTorch; see core/io/safetensors_header.h.
#include "core/io/safetensors_header.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

namespace mnemo::io {
namespace {

using Json = nlohmann::json;


struct DtypeSize {
  const char* name;
  std::size_t size;
};
const DtypeSize kDtypeSizes[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                                 {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};


std::string offsets_text(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// A JSON value as a non-negative integer, or a problem description.
std::optional<std::uint64_t> as_unsigned(const Json& v, std::string* problem) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    *problem = "is negative (" + v.dump() + ")";
  } else {
    *problem = "is not an integer (" + v.dump() + ")";
  }
  return std::nullopt;
}

SafetensorsEntry parse_entry(const std::string& path, const std::string& name, const Json& spec,
                  std::uint64_t data_size) {
  if (name.empty()) safetensors_fail(path, "header has a tensor with an empty name");
  if (!spec.is_object()) safetensors_fail_tensor(path, name, "header entry is not a JSON object");
  SafetensorsEntry e;
  e.name = name;

  const auto dtype_it = spec.find("dtype");
  if (dtype_it == spec.end()) safetensors_fail_tensor(path, name, "header entry is missing \"dtype\"");
  if (!dtype_it->is_string()) safetensors_fail_tensor(path, name, "\"dtype\" is not a string");
  e.dtype = dtype_it->get<std::string>();
  e.element_size = safetensors_dtype_size(e.dtype);
  if (e.element_size == 0) {
    safetensors_fail_tensor(path, name,
                "unknown dtype '" + e.dtype + "' (supported: " + safetensors_supported_list() + ")");
  }

  const auto shape_it = spec.find("shape");
  if (shape_it == spec.end()) safetensors_fail_tensor(path, name, "header entry is missing \"shape\"");
  if (!shape_it->is_array()) safetensors_fail_tensor(path, name, "\"shape\" is not an array");
  if (shape_it->size() > kMaxRank) {
    safetensors_fail_tensor(path, name, "shape has " + std::to_string(shape_it->size()) + " dimensions, over the limit of " +
                                std::to_string(kMaxRank));
  }
  for (std::size_t i = 0; i < shape_it->size(); ++i) {
    std::string problem;
    const auto dim = as_unsigned((*shape_it)[i], &problem);
    if (!dim) safetensors_fail_tensor(path, name, "shape dimension " + std::to_string(i) + " " + problem);
    if (*dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      safetensors_fail_tensor(path, name, "shape dimension " + std::to_string(i) + " is too large");
    }
    e.shape.push_back(static_cast<std::int64_t>(*dim));
  }

  const auto off_it = spec.find("data_offsets");
  if (off_it == spec.end()) safetensors_fail_tensor(path, name, "header entry is missing \"data_offsets\"");
  if (!off_it->is_array() || off_it->size() != 2) {
    safetensors_fail_tensor(path, name, "\"data_offsets\" is not an array of two integers");
  }
  std::uint64_t offs[2];
  for (int i = 0; i < 2; ++i) {
    std::string problem;
    const auto v = as_unsigned((*off_it)[i], &problem);
    if (!v) safetensors_fail_tensor(path, name, std::string("data_offsets ") + (i ? "end " : "begin ") + problem);
    offs[i] = *v;
  }
  e.begin = offs[0];
  e.end = offs[1];
  if (e.begin > e.end) {
    safetensors_fail_tensor(path, name, "data_offsets " + offsets_text(e.begin, e.end) + " have begin after end");
  }

  // Bytes the shape needs; overflow means no file could hold it.
  bool has_zero = std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end();
  std::uint64_t need = has_zero ? 0 : e.element_size;
  bool overflow = false;
  if (!has_zero) {
    for (const auto d : e.shape) {
      if (__builtin_mul_overflow(need, static_cast<std::uint64_t>(d), &need)) {
        overflow = true;
        break;
      }
    }
  }
  const std::uint64_t span = e.end - e.begin;
  if (overflow || need != span) {
    safetensors_fail_tensor(path, name,
                "shape " + shape_text(e.shape) + " with dtype " + e.dtype + " needs " +
                    (overflow ? std::string("more than 2^64") : std::to_string(need)) +
                    " bytes but data_offsets " + offsets_text(e.begin, e.end) + " span " +
                    std::to_string(span) + " bytes (shape/size mismatch)");
  }
  if (e.end > data_size) {
    safetensors_fail_tensor(path, name,
                "data_offsets " + offsets_text(e.begin, e.end) +
                    " run past the end of the data section (" + std::to_string(data_size) +
                    " bytes); the file is truncated or corrupt");
  }
  return e;
}

// Finds the first top-level key that appears twice, in one linear SAX pass. (nlohmann's
// parse() keeps the last of duplicate keys silently, and its parser-callback mode, which
// could see them, takes time quadratic in the number of keys: 65536 tensors took minutes.)
class DuplicateKeys : public nlohmann::json_sax<Json> {
 public:
  std::string duplicate;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1 && !seen_.insert(k).second && duplicate.empty()) duplicate = k;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  int depth_ = 0;
  std::set<std::string> seen_;
};

Json parse_header(const std::string& path, const std::string& text) {
  Json header;
  try {
    header = Json::parse(text);
  } catch (const Json::exception& e) {
    safetensors_fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) safetensors_fail(path, "header is not a JSON object");
  DuplicateKeys dup;
  Json::sax_parse(text, &dup);
  if (!dup.duplicate.empty()) safetensors_fail(path, "header lists '" + dup.duplicate + "' more than once");
  return header;
}

}  // namespace

std::string safetensors_supported_list() {
  std::string s;
  for (const auto& d : kDtypeSizes) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

void safetensors_fail(const std::string& path, const std::string& problem) {
  throw SafetensorsError(path + ": " + problem);
}

void safetensors_fail_tensor(const std::string& path, const std::string& name, const std::string& problem) {
  throw SafetensorsError(path + ": tensor '" + name + "': " + problem);
}

void check_safetensors_bool(const std::string& path, const std::string& name, const unsigned char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] > 1) {
      safetensors_fail_tensor(path, name,
                  "BOOL data holds byte value " + std::to_string(p[i]) + " at element " +
                      std::to_string(i) + "; expected 0 or 1");
    }
  }
}


const std::vector<std::string>& safetensors_dtypes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& d : kDtypeSizes) v.push_back(d.name);
    return v;
  }();
  return names;
}

std::size_t safetensors_dtype_size(const std::string& name) {
  for (const auto& d : kDtypeSizes)
    if (name == d.name) return d.size;
  return 0;
}

SafetensorsHeader parse_safetensors_header(const std::string& path, std::uint64_t file_size, const ReadAt& read_at) {
  if (file_size < kSafetensorsLengthPrefixBytes) {
    safetensors_fail(path, "file is " + std::to_string(file_size) +
                   " bytes, shorter than the 8-byte header length prefix; the file is truncated "
                   "or not a safetensors file");
  }

  unsigned char prefix[kSafetensorsLengthPrefixBytes];
  if (read_at(prefix, sizeof prefix, 0) != sizeof prefix) {
    safetensors_fail(path, "unexpected end of file while reading the header length");
  }
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | prefix[i];

  if (header_len > kMaxHeaderBytes) {
    safetensors_fail(path, "header length " + std::to_string(header_len) + " bytes exceeds the limit of " +
                   std::to_string(kMaxHeaderBytes) +
                   " bytes; the file is corrupt or not a safetensors file");
  }
  const std::uint64_t after_prefix = file_size - kSafetensorsLengthPrefixBytes;
  if (header_len > after_prefix) {
    safetensors_fail(path, "header length " + std::to_string(header_len) +
                   " bytes runs past the end of the file (" + std::to_string(after_prefix) +
                   " bytes follow the length prefix); the file is truncated or corrupt");
  }

  std::string header_text(static_cast<std::size_t>(header_len), '\0');
  if (read_at(header_text.data(), header_text.size(), kSafetensorsLengthPrefixBytes) !=
      header_text.size()) {
    safetensors_fail(path, "unexpected end of file while reading the header (the file changed while loading?)");
  }
  const Json header = parse_header(path, header_text);

  const std::uint64_t data_start = kSafetensorsLengthPrefixBytes + header_len;
  const std::uint64_t data_size = file_size - data_start;

  std::map<std::string, std::string> meta;
  std::vector<SafetensorsEntry> entries;
  const std::size_t tensors = header.size() - (header.contains(kSafetensorsMetadataKey) ? 1 : 0);
  if (tensors > kMaxTensors) {
    safetensors_fail(path, "header lists " + std::to_string(tensors) + " tensors, over the limit of " + std::to_string(kMaxTensors));
  }
  entries.reserve(tensors);
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kSafetensorsMetadataKey) {
      if (!it->is_object()) safetensors_fail(path, "\"__metadata__\" is not a JSON object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) {
          safetensors_fail(path, "\"__metadata__\" value for key '" + m.key() + "' is not a string");
        }
        meta[m.key()] = m->get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, it.key(), *it, data_size));
  }

  std::stable_sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const SafetensorsEntry* reach = nullptr;  // the non-empty entry that reaches furthest so far
  for (const auto& e : entries) {
    if (e.begin == e.end) continue;
    if (reach && e.begin < reach->end) {
      safetensors_fail_tensor(path, e.name,
                  "data_offsets " + offsets_text(e.begin, e.end) + " overlap tensor '" +
                      reach->name + "' " + offsets_text(reach->begin, reach->end));
    }
    if (!reach || e.end > reach->end) reach = &e;
  }

  SafetensorsHeader h;
  h.data_start = data_start;
  h.data_size = data_size;
  h.entries = std::move(entries);
  h.metadata = std::move(meta);
  return h;
}

SafetensorsHeader parse_safetensors_bytes(const std::string& path, std::string_view bytes) {
  return parse_safetensors_header(path, bytes.size(), [&](void* buf, std::size_t size, std::uint64_t offset) {
    if (offset >= bytes.size()) return std::size_t{0};
    const std::size_t n = std::min<std::uint64_t>(size, bytes.size() - offset);
    std::memcpy(buf, bytes.data() + offset, n);
    return n;
  });
}

}  // namespace mnemo::io
