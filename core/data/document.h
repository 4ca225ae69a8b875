// Document: a file's bytes, its token ids and each token's byte range.
#pragma once
#include "core/errors.h"
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mnemo {

// A user-facing problem with an input file; the message names the file and the fix.
struct DocumentError : InputError {
  using InputError::InputError;
};

struct Document {
  std::string path;    // "" for in-memory documents
  std::string bytes;   // the raw file content (any encoding)
  std::vector<int64_t> ids;
  std::vector<std::pair<int64_t, int64_t>> offsets;  // byte range [begin, end) per token

  int64_t size() const { return static_cast<int64_t>(ids.size()); }
  // True when the bytes contain NUL or are not valid UTF-8 (the UI escapes such bytes).
  bool looks_binary() const;
};

inline constexpr int64_t kMaxDocumentBytes = int64_t{256} << 20;  // 256 MiB

// Reads and tokenizes a file. Throws DocumentError for a missing path, a directory, an
// unreadable, empty or oversized (> kMaxDocumentBytes) file. Binary files are allowed.
Document load_document(const std::string& path);
Document make_document(std::string bytes, std::string path = "");

}  // namespace mnemo
