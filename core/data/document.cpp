#include "core/data/document.h"

#include "core/data/tokenizer.h"
#include "core/platform/mapped_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mnemo {

bool Document::looks_binary() const {
  // One pass checking UTF-8 and looking for NUL; a mapped document's pages are released every
  // kScanChunk bytes, so the pass leaves at most one chunk resident.
  const size_t n = bytes.size();
  size_t i = 0, released = 0;
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (c == 0 || len == 0 || i + len > n) return true;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(bytes[i + k]) >> 6) != 0x2) return true;
    i += len;
    if (i - released >= static_cast<size_t>(kScanChunk)) {
      release(static_cast<int64_t>(released), static_cast<int64_t>(i));
      released = i;
    }
  }
  return false;
}

namespace {
int64_t mtime_ns(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec; }
}  // namespace

bool Document::changed_on_disk() const {
  if (!mapping) return false;
  if (mapping->truncated()) return true;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;  // moved or deleted: the mapping still holds the file
  if (static_cast<uint64_t>(st.st_dev) != opened.device || static_cast<uint64_t>(st.st_ino) != opened.inode)
    return false;  // replaced by another file (an editor's save): the mapping still holds the old one
  return st.st_size != opened.size || mtime_ns(st) != opened.mtime_ns;
}

void Document::release(int64_t begin, int64_t end) const {
  if (mapping)
    mapping->release(static_cast<size_t>(std::max<int64_t>(begin, 0)), static_cast<size_t>(std::max<int64_t>(end, 0)));
}

std::vector<int64_t> Document::ids(int64_t begin, int64_t end) const {
  if (end < 0 || end > size()) end = size();
  begin = std::clamp<int64_t>(begin, 0, end);
  std::vector<int64_t> out(static_cast<size_t>(end - begin));
  for (int64_t t = begin; t < end; ++t) out[static_cast<size_t>(t - begin)] = id(t);
  return out;
}

Document make_document(std::string bytes, std::string path) {
  Document d;
  d.path = std::move(path);
  d.owned = std::make_shared<const std::string>(std::move(bytes));
  d.bytes = *d.owned;
  return d;
}

Document load_document(const std::string& path) {
  if (path.empty()) throw DocumentError("no document given: pass a file path (e.g. --doc assets/sample.txt)");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw DocumentError("document '" + path + "' cannot be opened: " + std::strerror(errno) + "; check the path");
  if (S_ISDIR(st.st_mode))
    throw DocumentError("document '" + path + "' is a directory; pass a file inside it");
  if (!S_ISREG(st.st_mode))
    throw DocumentError("document '" + path + "' is not a regular file; pass a text or binary file");
  if (st.st_size == 0)
    throw DocumentError("document '" + path + "' is empty; there is nothing to step through");
  if (st.st_size > kMaxDocumentBytes)
    throw DocumentError("document '" + path + "' is " + std::to_string(st.st_size >> 20) +
                        " MiB, over the 256 MiB limit; split it or pass a smaller file");
  // Opened only now that it is known to be a regular file (opening a FIFO would block), and
  // checked again on the descriptor: what is mapped or read is what was checked.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DocumentError("document '" + path + "' cannot be read: " + std::strerror(errno) + "; check its permissions");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 || st.st_size > kMaxDocumentBytes)
    throw DocumentError("document '" + path + "' changed while it was being opened; open it again");
  const int64_t n = st.st_size;
  if (n >= kMapMinBytes) {
    if (auto m = platform::MappedFile::map(fd, static_cast<size_t>(n))) {
      Document d;
      d.path = path;
      d.bytes = std::string_view(m->data(), m->size());
      d.mapping = std::move(m);
      d.opened = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), n, mtime_ns(st)};
      return d;
    }
    // Not mappable here (see MappedFile::map): read it like a small file.
  }
  std::string bytes(static_cast<size_t>(n), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw DocumentError("document '" + path + "' cannot be read: " + std::strerror(errno) + "; check the file");
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  if (got != bytes.size())
    throw DocumentError("document '" + path + "' could not be read in full (file changed while reading?)");
  return make_document(std::move(bytes), path);
}

}  // namespace mnemo
