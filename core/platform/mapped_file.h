// A read-only memory map of a whole file that survives the file shrinking under it.
//
// Large documents are mapped instead of copied (core/data/document.h): their bytes cost page
// cache, which the kernel can drop and read again, not private memory. A plain mapping has one
// hazard: when another program truncates the file, reading a page past its new end raises
// SIGBUS and kills the process. MappedFile installs a SIGBUS handler (once, chaining to any
// earlier one) that puts a page of zeros at a faulting address inside a live MappedFile and
// marks it truncated(); the read then sees 0 and the program goes on. A fault anywhere else
// goes to the handler that was there before, or ends the process as it would have.
// See docs/reliability.md#large-documents.
#pragma once
#include <cstddef>
#include <memory>

namespace mnemo::platform {

class MappedFile {
 public:
  // Maps the first `size` bytes (size >= 1) of the open file `fd`, read-only and private. The
  // descriptor may be closed afterwards. Returns null when the file cannot be mapped (mmap
  // failed, or the table of live mappings the SIGBUS handler watches is full): the caller then
  // reads the file instead.
  static std::shared_ptr<const MappedFile> map(int fd, std::size_t size);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  std::size_t size() const { return size_; }
  // True once a read touched a page the file no longer has (it was truncated while mapped);
  // such pages read as zeros from then on.
  bool truncated() const;
  // Drops the pages overlapping [begin, end) from this process's resident memory. Nothing
  // changes for readers: the next access reads them again (from the page cache, or the file).
  void release(std::size_t begin, std::size_t end) const;

 private:
  MappedFile(const char* data, std::size_t size, int slot) : data_(data), size_(size), slot_(slot) {}
  const char* data_;
  std::size_t size_;
  int slot_;  // index in the SIGBUS handler's table
};

}  // namespace mnemo::platform
