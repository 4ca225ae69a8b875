#include "core/io/read_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mnemo::io {

std::string not_regular_reason(unsigned mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a file; pass the file itself";
  if (S_ISDIR(mode)) return "is a directory, not a file";
  if (S_ISSOCK(mode)) return "is a socket, not a file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device, not a file";
  return "is not a regular file";
}

int open_regular_file(const std::string& path, std::string* why, std::uint64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    *why = err == ENOENT ? std::string(kNoSuchFile) : "cannot be read: " + std::string(std::strerror(err));
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *why = "cannot be read: " + std::string(std::strerror(errno));
    ::close(fd);
    return -1;
  }
  if (std::string r = not_regular_reason(st.st_mode); !r.empty()) {
    *why = std::move(r);
    ::close(fd);
    return -1;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (size) *size = static_cast<std::uint64_t>(st.st_size);
  why->clear();
  return fd;
}

std::string read_regular_file(const std::string& path, std::string* out, std::uint64_t max_bytes) {
  std::string why;
  std::uint64_t size = 0;
  const int fd = open_regular_file(path, &why, &size);
  if (fd < 0) return why;
  if (size > max_bytes) {
    ::close(fd);
    return "is " + std::to_string(size) + " bytes, larger than the limit of " + std::to_string(max_bytes) + " bytes";
  }
  out->reserve(static_cast<std::size_t>(size));
  why = read_to_end(fd, out, max_bytes);
  ::close(fd);
  return why;
}

std::string read_to_end(int fd, std::string* out, std::uint64_t max_bytes) {
  out->clear();
  std::size_t done = 0;
  // Read to the end even when the file grew since fstat, up to the limit.
  for (;;) {
    if (done == out->size()) {
      if (out->size() >= max_bytes) {
        char probe;
        const ssize_t n = ::read(fd, &probe, 1);
        if (n > 0) return "grew past the limit of " + std::to_string(max_bytes) + " bytes while being read";
        return "";
      }
      const std::uint64_t grow = std::max<std::uint64_t>(65536, out->capacity() - out->size());
      out->resize(static_cast<std::size_t>(std::min<std::uint64_t>(max_bytes, out->size() + grow)));
    }
    const ssize_t n = ::read(fd, out->data() + done, out->size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      out->resize(done);
      return "cannot be read: " + std::string(std::strerror(err));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out->resize(done);
  return "";
}

std::string read_exactly(int fd, void* buf, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::read(fd, static_cast<char*>(buf) + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return "cannot be read: " + std::string(std::strerror(errno));
    }
    if (r == 0) return "ends after " + std::to_string(done) + " of the " + std::to_string(n) + " bytes";
    done += static_cast<std::size_t>(r);
  }
  return "";
}

}  // namespace mnemo::io
