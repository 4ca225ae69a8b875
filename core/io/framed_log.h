// Append-only framed log (docs/formats.md#sessions metrics.log). Each record:
//   u32 length | u32 masked CRC32C of the 4 length bytes | payload | u32 masked CRC32C of payload
// all little-endian. A reader returns every complete, checksummed record before the first
// damage (torn tail after a crash, flipped byte) and reports where and why it stopped.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace mnemo::io {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI and LevelDB.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
// Masked CRC (rotate right 15, add 0xa282ead8): a CRC stored next to the data it covers
// would otherwise be easy to mistake for data whose CRC is computed again.
uint32_t mask_crc(uint32_t crc);

inline constexpr uint32_t kMaxRecordBytes = 64u << 20;  // 64 MiB: larger lengths are damage

class FramedLogWriter {
 public:
  // Opens `path` for appending (created if missing). Throws IoError naming the path.
  explicit FramedLogWriter(const std::string& path);
  ~FramedLogWriter();
  FramedLogWriter(const FramedLogWriter&) = delete;
  FramedLogWriter& operator=(const FramedLogWriter&) = delete;
  // Appends one record and flushes it to the OS; `sync` also fsyncs. Throws IoError
  // (e.g. disk full); a failed append leaves at most a torn tail, which readers skip.
  void append(const std::string& payload, bool sync = false);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

struct LogReadResult {
  std::vector<std::string> records;  // every complete record before the damage, in order
  uint64_t good_bytes = 0;           // bytes up to the end of the last good record
  uint64_t file_bytes = 0;
  bool clean = true;                 // false when the reader stopped before the end of file
  std::string stop_reason;           // why it stopped ("torn tail: ...", "checksum mismatch ...")
  bool shrunk = false;               // the file is shorter than the offset asked for
};

// Reads a framed log from byte `offset` (a previous result's good_bytes, to follow a log
// that another process is appending to: a torn tail there may be a record still being
// written, so read again from good_bytes later). Offsets in the result are absolute. A
// missing file reads as empty and clean. Throws IoError only when the file exists but
// cannot be read.
LogReadResult read_framed_log(const std::string& path, uint64_t offset = 0);

}  // namespace mnemo::io
