#include "core/data/document.h"

#include "core/data/tokenizer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace mnemo {

namespace {
bool valid_utf8(const std::string& s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += len;
  }
  return true;
}
}  // namespace

bool Document::looks_binary() const {
  return bytes.find('\0') != std::string::npos || !valid_utf8(bytes);
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
  d.bytes = std::move(bytes);
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DocumentError("document '" + path + "' cannot be read: " + std::strerror(errno) + "; check its permissions");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  in.read(bytes.data(), st.st_size);
  if (in.gcount() != st.st_size)
    throw DocumentError("document '" + path + "' could not be read in full (file changed while reading?)");
  return make_document(std::move(bytes), path);
}

}  // namespace mnemo
