// Atomic file replacement (docs/formats.md#safetensors: checkpoints, `latest` pointers, figure exports).
//
// write_file_atomic writes to a fresh temporary file in the target's directory, fsyncs it,
// renames it over the target and fsyncs the directory. Readers see either the old file or
// the complete new one, never a partial write. On any failure the temporary file is removed,
// a previous target file is left untouched, and IoError is thrown naming the path and the
// errno text. Renaming replaces a symlink at `path` itself, not the file it points to.
// The new file gets mode 0666 & ~umask. Uses POSIX open/write/fsync/rename (no stdout).
#pragma once
#include "core/errors.h"
#include <cstddef>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

namespace mnemo::io {

// Any file-system failure in this module; what() names the path and the errno text.
using IoError = mnemo::IoError;

// Replaces `path` with exactly `size` bytes from `data` (data may be null when size is 0).
void write_file_atomic(const std::string& path, const void* data, std::size_t size);
inline void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_file_atomic(path, bytes.data(), bytes.size());
}

// Replaces `path` with what `writer` writes to the stream it is given. The writer must not
// close the stream; it may throw (the exception propagates after cleanup). Write errors the
// stream records (std::ferror) or that show at flush/fsync/close are reported as IoError.
void write_file_atomic(const std::string& path, const std::function<void(std::FILE*)>& writer);

// The text of an errno value ("No such file or directory"), for messages.
std::string errno_text(int err);

// Writes all `size` bytes to `f` or throws IoError naming `path` and the errno text.
// A convenience for writers passed to write_file_atomic.
void write_all(std::FILE* f, const void* data, std::size_t size, const std::string& path);

// fsyncs directory `dir` so a rename or create inside it is durable. Throws IoError.
// File systems that cannot fsync a directory (EINVAL) are accepted silently.
void fsync_directory(const std::string& dir);

// Checks, before anything is written, that `dir` is a writable directory or can be created
// inside one. Throws InputError whose message starts with `what` and names the path, e.g.
// "--out '/x/y' cannot be created: '/x' is not writable".
void check_output_dir(const std::string& dir, const std::string& what);

// mkdir -p: creates `path` and its missing parents. Throws IoError naming the directory that
// could not be created.
void make_dirs(const std::string& path);

// The directory that holds `path` ("." when `path` has no slash).
std::string parent_directory(const std::string& path);

}  // namespace mnemo::io
