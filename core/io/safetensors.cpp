// Safetensors reader/writer; see core/io/safetensors.h for the layout and contracts.
#include "core/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "core/io/atomic_file.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "core/io/safetensors assumes a little-endian host (the format stores little-endian data)"
#endif

namespace mnemo::io {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kMetadataKey = "__metadata__";
constexpr std::uint64_t kLengthPrefixBytes = 8;
constexpr std::uint64_t kHeaderAlign = 8;  // data section starts at a multiple of this

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
  std::size_t size;
};

const DtypeInfo kDtypes[] = {
    {"F64", torch::kFloat64, 8}, {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2},
    {"BF16", torch::kBFloat16, 2}, {"I64", torch::kInt64, 8}, {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},   {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

std::string supported_list() {
  std::string s;
  for (const auto& d : kDtypes) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw SafetensorsError(path + ": " + problem);
}

[[noreturn]] void fail_tensor(const std::string& path, const std::string& name,
                              const std::string& problem) {
  throw SafetensorsError(path + ": tensor '" + name + "': " + problem);
}

std::string errno_text(int err) { return std::system_category().message(err); }

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

// ---------------------------------------------------------------- reading

// Owns a read-only descriptor.
class InputFile {
 public:
  InputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      if (err == ENOENT) fail(path, "file does not exist");
      fail(path, "cannot open file: " + errno_text(err));
    }
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { ::close(fd_); }

  // Size of a regular file; rejects directories and other non-regular files.
  std::uint64_t regular_file_size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(path_, "cannot stat file: " + errno_text(errno));
    if (S_ISDIR(st.st_mode)) fail(path_, "is a directory, not a safetensors file");
    if (!S_ISREG(st.st_mode)) fail(path_, "is not a regular file");
    return static_cast<std::uint64_t>(st.st_size);
  }

  // Reads up to `size` bytes at `offset`; returns how many were read (fewer only at EOF).
  std::size_t read_at(void* buf, std::size_t size, std::uint64_t offset) const {
    char* p = static_cast<char*>(buf);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd_, p + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        fail(path_, "read failed: " + errno_text(errno));
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    return done;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

struct Entry {
  std::string name;
  torch::ScalarType dtype = torch::kFloat32;
  std::string dtype_text;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

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

Entry parse_entry(const std::string& path, const std::string& name, const Json& spec,
                  std::uint64_t data_size) {
  if (name.empty()) fail(path, "header has a tensor with an empty name");
  if (!spec.is_object()) fail_tensor(path, name, "header entry is not a JSON object");
  Entry e;
  e.name = name;

  const auto dtype_it = spec.find("dtype");
  if (dtype_it == spec.end()) fail_tensor(path, name, "header entry is missing \"dtype\"");
  if (!dtype_it->is_string()) fail_tensor(path, name, "\"dtype\" is not a string");
  e.dtype_text = dtype_it->get<std::string>();
  const auto dtype = parse_dtype(e.dtype_text);
  if (!dtype) {
    fail_tensor(path, name,
                "unknown dtype '" + e.dtype_text + "' (supported: " + supported_list() + ")");
  }
  e.dtype = *dtype;

  const auto shape_it = spec.find("shape");
  if (shape_it == spec.end()) fail_tensor(path, name, "header entry is missing \"shape\"");
  if (!shape_it->is_array()) fail_tensor(path, name, "\"shape\" is not an array");
  for (std::size_t i = 0; i < shape_it->size(); ++i) {
    std::string problem;
    const auto dim = as_unsigned((*shape_it)[i], &problem);
    if (!dim) fail_tensor(path, name, "shape dimension " + std::to_string(i) + " " + problem);
    if (*dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail_tensor(path, name, "shape dimension " + std::to_string(i) + " is too large");
    }
    e.shape.push_back(static_cast<std::int64_t>(*dim));
  }

  const auto off_it = spec.find("data_offsets");
  if (off_it == spec.end()) fail_tensor(path, name, "header entry is missing \"data_offsets\"");
  if (!off_it->is_array() || off_it->size() != 2) {
    fail_tensor(path, name, "\"data_offsets\" is not an array of two integers");
  }
  std::uint64_t offs[2];
  for (int i = 0; i < 2; ++i) {
    std::string problem;
    const auto v = as_unsigned((*off_it)[i], &problem);
    if (!v) fail_tensor(path, name, std::string("data_offsets ") + (i ? "end " : "begin ") + problem);
    offs[i] = *v;
  }
  e.begin = offs[0];
  e.end = offs[1];
  if (e.begin > e.end) {
    fail_tensor(path, name, "data_offsets " + offsets_text(e.begin, e.end) + " have begin after end");
  }

  // Bytes the shape needs; overflow means no file could hold it.
  bool has_zero = std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end();
  std::uint64_t need = has_zero ? 0 : dtype_size(e.dtype);
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
    fail_tensor(path, name,
                "shape " + shape_text(e.shape) + " with dtype " + e.dtype_text + " needs " +
                    (overflow ? std::string("more than 2^64") : std::to_string(need)) +
                    " bytes but data_offsets " + offsets_text(e.begin, e.end) + " span " +
                    std::to_string(span) + " bytes (shape/size mismatch)");
  }
  if (e.end > data_size) {
    fail_tensor(path, name,
                "data_offsets " + offsets_text(e.begin, e.end) +
                    " run past the end of the data section (" + std::to_string(data_size) +
                    " bytes); the file is truncated or corrupt");
  }
  return e;
}

Json parse_header(const std::string& path, const std::string& text) {
  std::string duplicate;
  const Json::parser_callback_t on_event = [&duplicate, seen = std::set<std::string>()](
                                               int depth, Json::parse_event_t event,
                                               Json& parsed) mutable {
    if (event == Json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  Json header;
  try {
    header = Json::parse(text, on_event);
  } catch (const Json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  if (!duplicate.empty()) fail(path, "header lists '" + duplicate + "' more than once");
  return header;
}

void check_bool_bytes(const std::string& path, const std::string& name, const torch::Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.data_ptr());
  const auto n = static_cast<std::size_t>(t.nbytes());
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] > 1) {
      fail_tensor(path, name,
                  "BOOL data holds byte value " + std::to_string(p[i]) + " at element " +
                      std::to_string(i) + "; expected 0 or 1");
    }
  }
}

// ---------------------------------------------------------------- writing

void encode_u64_le(std::uint64_t v, unsigned char out[8]) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

torch::Tensor to_cpu_contiguous(const std::string& path, const std::string& name,
                                const torch::Tensor& t) {
  try {
    return t.detach().to(torch::kCPU).resolve_neg().resolve_conj().contiguous();
  } catch (const c10::Error& e) {
    fail_tensor(path, name, std::string("cannot copy to CPU: ") + e.what_without_backtrace());
  }
}

}  // namespace

std::string dtype_name(torch::ScalarType dtype) {
  for (const auto& d : kDtypes) {
    if (d.type == dtype) return d.name;
  }
  return {};
}

std::optional<torch::ScalarType> parse_dtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return d.type;
  }
  return std::nullopt;
}

std::size_t dtype_size(torch::ScalarType dtype) {
  for (const auto& d : kDtypes) {
    if (d.type == dtype) return d.size;
  }
  return 0;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  if (path.empty()) throw SafetensorsError("save_safetensors: the path is empty");

  OrderedJson header = OrderedJson::object();
  if (!metadata.empty()) {
    OrderedJson meta = OrderedJson::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header[kMetadataKey] = std::move(meta);
  }

  std::set<std::string> seen;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    if (name.empty()) fail(path, "tensor #" + std::to_string(i) + " has an empty name");
    if (name == kMetadataKey) {
      fail_tensor(path, name, "the name is reserved for the metadata block");
    }
    if (!seen.insert(name).second) fail_tensor(path, name, "duplicate tensor name");
    if (!t.defined()) fail_tensor(path, name, "tensor is undefined");
    if (t.layout() != torch::kStrided) {
      fail_tensor(path, name, "only dense (strided) tensors can be saved");
    }
    const std::string dn = dtype_name(t.scalar_type());
    if (dn.empty()) {
      fail_tensor(path, name,
                  std::string("dtype ") + c10::toString(t.scalar_type()) +
                      " is not supported (supported: " + supported_list() + ")");
    }
    const auto nbytes = static_cast<std::uint64_t>(t.numel()) * dtype_size(t.scalar_type());
    OrderedJson entry = OrderedJson::object();
    entry["dtype"] = dn;
    entry["shape"] = t.sizes().vec();
    entry["data_offsets"] = OrderedJson::array({offset, offset + nbytes});
    header[name] = std::move(entry);
    offset += nbytes;
  }

  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const OrderedJson::exception& e) {
    fail(path, std::string("cannot encode the header (tensor names and metadata must be UTF-8): ") +
                   e.what());
  }
  const auto padded = (header_text.size() + kHeaderAlign - 1) / kHeaderAlign * kHeaderAlign;
  header_text.resize(padded, ' ');

  try {
    write_file_atomic(path, [&](std::FILE* f) {
      unsigned char prefix[kLengthPrefixBytes];
      encode_u64_le(header_text.size(), prefix);
      write_all(f, prefix, sizeof prefix, path);
      write_all(f, header_text.data(), header_text.size(), path);
      for (const auto& [name, t] : tensors) {
        const torch::Tensor c = to_cpu_contiguous(path, name, t);
        write_all(f, c.data_ptr(), static_cast<std::size_t>(c.nbytes()), path);
      }
    });
  } catch (const IoError& e) {
    throw SafetensorsError(e.what());
  }
}

NamedTensors load_safetensors(const std::string& path,
                              std::map<std::string, std::string>* metadata) {
  InputFile file(path);
  const std::uint64_t file_size = file.regular_file_size();
  if (file_size < kLengthPrefixBytes) {
    fail(path, "file is " + std::to_string(file_size) +
                   " bytes, shorter than the 8-byte header length prefix; the file is truncated "
                   "or not a safetensors file");
  }

  unsigned char prefix[kLengthPrefixBytes];
  if (file.read_at(prefix, sizeof prefix, 0) != sizeof prefix) {
    fail(path, "unexpected end of file while reading the header length");
  }
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | prefix[i];

  if (header_len > kMaxHeaderBytes) {
    fail(path, "header length " + std::to_string(header_len) + " bytes exceeds the limit of " +
                   std::to_string(kMaxHeaderBytes) +
                   " bytes; the file is corrupt or not a safetensors file");
  }
  const std::uint64_t after_prefix = file_size - kLengthPrefixBytes;
  if (header_len > after_prefix) {
    fail(path, "header length " + std::to_string(header_len) +
                   " bytes runs past the end of the file (" + std::to_string(after_prefix) +
                   " bytes follow the length prefix); the file is truncated or corrupt");
  }

  std::string header_text(static_cast<std::size_t>(header_len), '\0');
  if (file.read_at(header_text.data(), header_text.size(), kLengthPrefixBytes) !=
      header_text.size()) {
    fail(path, "unexpected end of file while reading the header (the file changed while loading?)");
  }
  const Json header = parse_header(path, header_text);

  const std::uint64_t data_start = kLengthPrefixBytes + header_len;
  const std::uint64_t data_size = file_size - data_start;

  std::map<std::string, std::string> meta;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kMetadataKey) {
      if (!it->is_object()) fail(path, "\"__metadata__\" is not a JSON object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) {
          fail(path, "\"__metadata__\" value for key '" + m.key() + "' is not a string");
        }
        meta[m.key()] = m->get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, it.key(), *it, data_size));
  }

  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const Entry* reach = nullptr;  // the non-empty entry that reaches furthest so far
  for (const auto& e : entries) {
    if (e.begin == e.end) continue;
    if (reach && e.begin < reach->end) {
      fail_tensor(path, e.name,
                  "data_offsets " + offsets_text(e.begin, e.end) + " overlap tensor '" +
                      reach->name + "' " + offsets_text(reach->begin, reach->end));
    }
    if (!reach || e.end > reach->end) reach = &e;
  }

  NamedTensors out;
  out.reserve(entries.size());
  for (const auto& e : entries) {
    torch::Tensor t = torch::empty(e.shape, torch::TensorOptions().dtype(e.dtype));
    const auto nbytes = static_cast<std::size_t>(e.end - e.begin);
    if (nbytes > 0 && file.read_at(t.data_ptr(), nbytes, data_start + e.begin) != nbytes) {
      fail_tensor(path, e.name,
                  "unexpected end of file while reading data (the file changed while loading?)");
    }
    if (e.dtype == torch::kBool) check_bool_bytes(path, e.name, t);
    out.emplace_back(e.name, std::move(t));
  }
  if (metadata) *metadata = std::move(meta);
  return out;
}

}  // namespace mnemo::io
