// Atomic file replacement: temp file in the same directory, write, fsync, rename, fsync dir.
#include "core/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <system_error>

namespace mnemo::io {
namespace {

constexpr std::size_t kMaxTempStemChars = 96;  // keeps temp names under NAME_MAX
constexpr int kMaxCreateAttempts = 64;

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string unique_suffix() {
  static std::atomic<unsigned long> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const char* hex = "0123456789abcdef";
  std::string s = std::to_string(static_cast<long>(::getpid())) + "-" + std::to_string(counter++) + "-";
  std::uint64_t r = rng();
  for (int i = 0; i < 8; ++i, r >>= 4) s.push_back(hex[r & 0xF]);
  return s;
}

// A temporary file next to `target`; unlinked on destruction unless published.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target), dir_(parent_directory(target)) {
    if (target.empty()) throw IoError("cannot write a file with an empty path");
    const std::string stem = base_name(target).substr(0, kMaxTempStemChars);
    const auto slash = target.find_last_of('/');
    const std::string prefix = slash == std::string::npos ? std::string() : target.substr(0, slash + 1);
    int err = 0;
    for (int attempt = 0; attempt < kMaxCreateAttempts; ++attempt) {
      std::string candidate = prefix + "." + stem + ".tmp-" + unique_suffix();
      const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        fd_ = fd;
        path_ = std::move(candidate);
        return;
      }
      err = errno;
      if (err != EEXIST) break;
    }
    throw IoError(target_ + ": cannot create a temporary file in directory '" + dir_ +
                  "': " + errno_text(err));
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  int fd() const { return fd_; }
  // The caller took ownership of the descriptor (e.g. fdopen).
  void release_fd() { fd_ = -1; }

  void write_bytes(const void* data, std::size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("writing the temporary file failed", errno);
      }
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }

  void sync_and_close() {
    if (::fsync(fd_) != 0) fail("fsync of the temporary file failed", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("closing the temporary file failed", errno);
  }

  // Renames the (already synced and closed) temp file over the target, then fsyncs the dir.
  void publish() {
    if (::rename(path_.c_str(), target_.c_str()) != 0) {
      fail("cannot rename the temporary file over the target", errno);
    }
    path_.clear();
    fsync_directory(dir_);
  }

  [[noreturn]] void fail(const std::string& what, int err) const {
    throw IoError(target_ + ": " + what + ": " + errno_text(err));
  }

 private:
  std::string target_;
  std::string dir_;
  std::string path_;
  int fd_ = -1;
};

// fcloses a stream on destruction unless released.
class StreamGuard {
 public:
  explicit StreamGuard(std::FILE* f) : f_(f) {}
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;
  ~StreamGuard() {
    if (f_) std::fclose(f_);
  }
  std::FILE* release() {
    std::FILE* f = f_;
    f_ = nullptr;
    return f;
  }

 private:
  std::FILE* f_;
};

}  // namespace

std::string errno_text(int err) {
  if (err == 0) return "unknown error";
  return std::system_category().message(err);
}

std::string parent_directory(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw IoError(dir + ": cannot open directory for fsync: " + errno_text(err));
  }
  if (::fsync(fd) != 0 && errno != EINVAL) {
    const int err = errno;
    ::close(fd);
    throw IoError(dir + ": fsync of directory failed: " + errno_text(err));
  }
  ::close(fd);
}

void write_all(std::FILE* f, const void* data, std::size_t size, const std::string& path) {
  if (size == 0) return;
  errno = 0;
  if (std::fwrite(data, 1, size, f) != size) {
    const int err = errno;
    throw IoError(path + ": write failed: " + errno_text(err));
  }
}

void write_file_atomic(const std::string& path, const void* data, std::size_t size) {
  TempFile tmp(path);
  if (size > 0) tmp.write_bytes(data, size);
  tmp.sync_and_close();
  tmp.publish();
}

void write_file_atomic(const std::string& path, const std::function<void(std::FILE*)>& writer) {
  TempFile tmp(path);
  std::FILE* f = ::fdopen(tmp.fd(), "wb");
  if (!f) tmp.fail("cannot open a stream on the temporary file", errno);
  tmp.release_fd();
  StreamGuard guard(f);  // destroyed before tmp, so the stream closes before the unlink

  errno = 0;
  writer(f);
  const int writer_errno = errno;
  if (std::ferror(f)) tmp.fail("writing the temporary file failed", writer_errno);
  if (std::fflush(f) != 0) tmp.fail("writing the temporary file failed", errno);
  if (::fsync(::fileno(f)) != 0) tmp.fail("fsync of the temporary file failed", errno);
  if (std::fclose(guard.release()) != 0) tmp.fail("closing the temporary file failed", errno);
  tmp.publish();
}

void check_output_dir(const std::string& out, const std::string& what) {
  auto exists = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0;
  };
  auto is_dir = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  if (out.empty()) throw InputError(what + ": no output directory given");
  if (exists(out)) {
    if (!is_dir(out)) throw InputError(what + " '" + out + "' exists and is not a directory; pass a directory");
    if (::access(out.c_str(), W_OK | X_OK) != 0) throw InputError(what + " '" + out + "' is not writable; pass a writable directory");
    return;
  }
  std::string parent = out;
  while (!parent.empty() && parent.back() == '/') parent.pop_back();
  parent = parent_directory(parent);
  while (!exists(parent)) parent = parent_directory(parent);
  if (!is_dir(parent)) throw InputError(what + " '" + out + "' cannot be created: '" + parent + "' is not a directory");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw InputError(what + " '" + out + "' cannot be created: '" + parent + "' is not writable");
}

void make_dirs(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      struct stat st {};
      if (!cur.empty() && ::stat(cur.c_str(), &st) != 0 && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
        throw IoError("cannot create directory '" + cur + "': " + std::strerror(errno));
    }
    if (i < path.size()) cur.push_back(path[i]);
  }
}

}  // namespace mnemo::io
