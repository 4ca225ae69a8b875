// The safetensors header, parsed and checked without LibTorch (docs/formats.md#safetensors,
// docs/reliability.md#caps): the 8-byte length prefix, the JSON header, every entry's dtype,
// shape and data_offsets, overlaps and the caps below. core/io/safetensors.h reads the
// tensors a checked header describes; the fuzz targets (fuzz/) run this layer directly.
//
// Every rejection is a SafetensorsError whose message names the file, the problem and,
// where there is one, the tensor.
#pragma once
#include "core/errors.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mnemo::io {

// Every rejection by save_safetensors / load_safetensors.
struct SafetensorsError : FormatError {
  using FormatError::FormatError;
};

// Caps, checked before anything is allocated for what they bound (docs/reliability.md#caps).
constexpr std::uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;  // the JSON header
constexpr std::size_t kMaxTensors = 65536;                        // entries in one file
constexpr std::size_t kMaxRank = 16;                              // dimensions of one tensor

struct SafetensorsEntry {
  std::string name;
  std::string dtype;                // "F32", ...
  std::size_t element_size = 0;     // bytes per element
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // data_offsets, relative to the data section
};

struct SafetensorsHeader {
  std::uint64_t data_start = 0;  // absolute offset of the data section
  std::uint64_t data_size = 0;
  std::vector<SafetensorsEntry> entries;  // ordered by data offset (ties by end, then file order)
  std::map<std::string, std::string> metadata;
};

// Supported dtype names, in the writer's order: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL.
const std::vector<std::string>& safetensors_dtypes();
// Bytes per element of a dtype name (0 when unsupported).
std::size_t safetensors_dtype_size(const std::string& name);

// Reads up to `size` bytes at `offset` into `buf`; returns how many (fewer only at the end).
using ReadAt = std::function<std::size_t(void* buf, std::size_t size, std::uint64_t offset)>;

// Parses and checks the header of a safetensors file of `file_size` bytes named `path`.
SafetensorsHeader parse_safetensors_header(const std::string& path, std::uint64_t file_size, const ReadAt& read_at);
// The same for a file held in memory.
SafetensorsHeader parse_safetensors_bytes(const std::string& path, std::string_view bytes);
// Checks BOOL data: every byte 0 or 1.
// Shared by the header layer and the LibTorch reader/writer (core/io/safetensors.cpp).
inline constexpr const char* kSafetensorsMetadataKey = "__metadata__";
inline constexpr std::uint64_t kSafetensorsLengthPrefixBytes = 8;
// "F64, F32, ..." for messages.
std::string safetensors_supported_list();
// SafetensorsError "PATH: PROBLEM" / "PATH: tensor 'NAME': PROBLEM".
[[noreturn]] void safetensors_fail(const std::string& path, const std::string& problem);
[[noreturn]] void safetensors_fail_tensor(const std::string& path, const std::string& name, const std::string& problem);

void check_safetensors_bool(const std::string& path, const std::string& name, const unsigned char* data, std::size_t n);

}  // namespace mnemo::io
