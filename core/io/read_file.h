// Reading a file without ever blocking or growing without bound: a FIFO, socket or device in
// place of a session file, config, checkpoint or trace is refused at once (opened with
// O_NONBLOCK, then checked to be a regular file), and a file larger than the caller's limit is
// refused before it is read. docs/reliability.md lists the guarantees and their tests.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace mnemo::io {

// read_regular_file's reason when the path does not exist (callers word that case themselves).
inline constexpr const char* kNoSuchFile = "does not exist";
// The largest JSON config (--config, tours, mtn-qa configs) read.
inline constexpr std::uint64_t kMaxConfigBytes = 64ull << 20;

// Why `mode` (a stat st_mode) is not a regular file, in words ("is a FIFO (named pipe), not a
// file", "is a directory, not a file", ...); "" for a regular file.
std::string not_regular_reason(unsigned mode);

// Opens `path` read-only without blocking and checks it is a regular file. Returns the
// descriptor (blocking mode restored), or -1 with *why: kNoSuchFile, not_regular_reason's text,
// or "cannot be read: <system reason>". *size receives the file's size when given.
int open_regular_file(const std::string& path, std::string* why, std::uint64_t* size = nullptr);

// Reads all of regular file `path` into *out. Returns "" on success, else why not: kNoSuchFile,
// "is a FIFO (named pipe), not a file; pass the file itself", "is N bytes, larger than the
// limit of M bytes", "cannot be read: <system reason>".
std::string read_regular_file(const std::string& path, std::string* out, std::uint64_t max_bytes);

// The same on a descriptor open_regular_file gave (so that the file checked is the file read:
// never a second open by path, which a FIFO swapped in between would block): reads from the
// descriptor's position to the end into *out. Does not close fd. Returns "" or why not.
std::string read_to_end(int fd, std::string* out, std::uint64_t max_bytes);

// Reads exactly n bytes from fd's position into buf. Returns "" or why not ("ends after B of the
// N bytes", "cannot be read: <system reason>").
std::string read_exactly(int fd, void* buf, std::size_t n);

}  // namespace mnemo::io
