// Document: a file's bytes (read, or memory-mapped when large), its token ids and each token's byte range.
#pragma once
#include "core/errors.h"
#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mnemo {

namespace platform {
class MappedFile;  // core/platform/mapped_file.h
}

// A user-facing problem with an input file; the message names the file and the fix.
struct DocumentError : InputError {
  using InputError::InputError;
};

// A document in O(1) memory per byte beyond the bytes themselves: the byte-level tokenizer
// (core/data/tokenizer.h) gives one token per byte, token t = byte t, so token ids and byte
// ranges are computed when asked for, never stored; segments are built on demand
// (core/data/segmenter.h). A file of kMapMinBytes or more is memory-mapped, not copied: its
// bytes are page cache the kernel can drop and read again, and passes over the whole document
// (looks_binary, scan) release each chunk's pages as they go, so only the pages in use stay
// resident. See docs/reliability.md#large-documents for the measured figures.
// Copies share the bytes; a Document is safe to read from several threads.
struct Document {
  std::string path;        // "" for in-memory documents
  std::string_view bytes;  // the raw content (any encoding); lives as long as any copy of this Document
  // What owns `bytes`: the copy of a document read into memory, or the map of a file of
  // kMapMinBytes or more (the other is null).
  std::shared_ptr<const std::string> owned;
  std::shared_ptr<const platform::MappedFile> mapping;

  int64_t size() const { return static_cast<int64_t>(bytes.size()); }  // tokens
  // Token t's id (its byte value, 0..255). t must be in 0..size()-1.
  int64_t id(int64_t t) const { return static_cast<unsigned char>(bytes[static_cast<size_t>(t)]); }
  // Token t's byte range [begin, end).
  std::pair<int64_t, int64_t> offset(int64_t t) const { return {t, t + 1}; }
  // The ids of tokens [begin, end) (end < 0: to the end), materialised.
  std::vector<int64_t> ids(int64_t begin = 0, int64_t end = -1) const;
  // True when the bytes contain NUL or are not valid UTF-8 (the UI escapes such bytes).
  bool looks_binary() const;

  // True when the bytes are a memory map of the file at `path`.
  bool mapped() const { return mapping != nullptr; }
  // True when a mapped document's file changed on disk since it was opened (written to, or cut
  // short: bytes past its new end read as 0), so what is read now may not be what was opened.
  // Always false for a document read into memory (it has its own copy).
  bool changed_on_disk() const;
  // Drops the pages holding bytes [begin, end) from resident memory (mapped documents; a no-op
  // otherwise). Readers see no difference: the next access reads them again.
  void release(int64_t begin, int64_t end) const;
  // Calls f(std::string_view chunk, int64_t first) over consecutive chunks covering the whole
  // document (first: the chunk's first byte), releasing each chunk's pages after it.
  template <class F>
  void scan(F&& f) const {
    for (int64_t b = 0; b < size(); b += kScanChunk) {
      const int64_t n = std::min(kScanChunk, size() - b);
      f(bytes.substr(static_cast<size_t>(b), static_cast<size_t>(n)), b);
      release(b, b + n);
    }
  }
  static constexpr int64_t kScanChunk = int64_t{4} << 20;

  // Set by load_document for mapped files: what the file was when opened.
  struct FileStamp {
    uint64_t device = 0, inode = 0;
    int64_t size = 0, mtime_ns = 0;
  };
  FileStamp opened;
};

// Files of at least this many bytes are memory-mapped by load_document; smaller ones are read.
inline constexpr int64_t kMapMinBytes = int64_t{1} << 20;  // 1 MiB

// The largest document load_document reads (docs/reliability.md#caps): a bigger file is
// refused before a byte of it is read, with a message naming the limit.
inline constexpr int64_t kMaxDocumentBytes = int64_t{256} << 20;  // 256 MiB

// Segmentation arithmetic (core/data/segmenter.h builds the tensors): how many segments of
// `segment_len` tokens `tokens` make, and the first token and real length of segment i.
// segment_len >= 1, tokens >= 0, 0 <= i < segment_count(...).
inline int64_t segment_count(int64_t tokens, int64_t segment_len) {
  return tokens / segment_len + (tokens % segment_len != 0);
}
inline std::pair<int64_t, int64_t> segment_tokens(int64_t tokens, int64_t segment_len, int64_t i) {
  const int64_t first = i * segment_len;
  return {first, std::min(segment_len, tokens - first)};
}

// Opens a file: maps it when it has kMapMinBytes or more, else reads it. Throws DocumentError for
// a missing path, a directory, a non-regular, unreadable, empty or oversized (> kMaxDocumentBytes)
// file. Binary files are allowed.
Document load_document(const std::string& path);
Document make_document(std::string bytes, std::string path = "");

}  // namespace mnemo
