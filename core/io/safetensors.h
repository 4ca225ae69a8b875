// Safetensors reader/writer (docs/formats.md#safetensors).
//
// File layout: u64 little-endian header length N, N bytes of UTF-8 JSON header
//   {"__metadata__": {str: str}, name: {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}}
// (offsets relative to the data section that follows the header), then raw little-endian data.
// Names are module paths such as "encoder.0.self_attn.q.weight".
//
// Writer: "__metadata__" first (omitted when empty), then the tensors in the given order, each
// entry with keys dtype, shape, data_offsets; compact JSON padded with spaces so the data
// section starts at a multiple of 8 bytes; tensor data packed back to back in the given order.
//
// Reader: every problem is a SafetensorsError whose message names the file, the problem and,
// where there is one, the tensor. Gaps between tensors and trailing bytes are allowed;
// overlapping tensors are not. Loaded tensors are CPU, contiguous and own their storage.
//
// Dtypes: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL. Little-endian hosts only.
#pragma once
#include "core/errors.h"
#include "core/io/safetensors_header.h"
#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mnemo::io {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// SafetensorsError and the caps (header bytes, tensor count, rank) are in
// core/io/safetensors_header.h, which parses and checks the header without LibTorch.

// Safetensors name of a dtype ("F32", "BF16", ...); empty string when it has none.
std::string dtype_name(torch::ScalarType dtype);
// Dtype for a safetensors name; std::nullopt for names this module does not support.
std::optional<torch::ScalarType> parse_dtype(const std::string& name);
// Bytes per element of a supported dtype (0 when unsupported).
std::size_t dtype_size(torch::ScalarType dtype);

// Writes `tensors` (any device, any strides; copied to contiguous CPU) and `metadata` to
// `path` atomically (see core/io/atomic_file.h). Rejects undefined or non-strided tensors,
// empty, duplicate or reserved ("__metadata__") names and unsupported dtypes before touching
// the file system. I/O failures also surface as SafetensorsError naming the path and errno text;
// on any failure a previous file at `path` is left intact.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Reads every tensor of `path`, ordered by data offset (ties by name). When `metadata` is
// non-null it is replaced by the file's "__metadata__" (empty when absent).
NamedTensors load_safetensors(const std::string& path,
                              std::map<std::string, std::string>* metadata = nullptr);

}  // namespace mnemo::io
