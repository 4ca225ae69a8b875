// Append-only framed log (docs/formats.md#sessions metrics.log). Each record:
//   u32 length | u32 masked CRC32C of the 4 length bytes | payload | u32 masked CRC32C of payload
// all little-endian. A reader returns every complete, checksummed record. Damage in the middle
// (a flipped or scrambled byte) is skipped: the reader scans forward byte by byte for the next
// position where a length and its checksum, and then a payload and its checksum, agree, and
// reports the skipped byte range (a gap). Bytes at the end that do not form a record (a torn
// tail after a crash, or a record still being written) are reported as the tail.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
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

// A damaged byte range the reader skipped; records after it were read again.
struct LogGap {
  uint64_t begin = 0, end = 0;  // absolute bytes [begin, end)
  std::string reason;           // the first fault at `begin` ("checksum mismatch in record payload")
};

struct LogReadResult {
  std::vector<std::string> records;  // every complete, checksummed record, in order
  std::vector<uint64_t> offsets;     // absolute byte where each record's frame starts
  std::vector<LogGap> gaps;          // damaged ranges skipped between records, in order
  uint64_t good_bytes = 0;           // bytes up to the end of the last good record
  uint64_t file_bytes = 0;
  bool clean = true;                 // false when there is a gap or a tail
  // Why reading stopped before the end of the file (the bytes good_bytes..file_bytes), or ""
  // when the file ends at a record's end: "torn tail: incomplete record header at byte N",
  // "torn tail: record of L bytes is incomplete at byte N", or a damage reason when no valid
  // record follows the damage ("checksum mismatch in record length at byte N").
  std::string stop_reason;
  bool shrunk = false;  // the file is shorter than the offset asked for
  bool torn_tail() const { return stop_reason.rfind("torn tail", 0) == 0; }
};

// "bytes B-E (reason)": how every reader names a gap (E exclusive).
std::string describe_gap(const LogGap& g);

// Reads a framed log from byte `offset` (a previous result's good_bytes, to follow a log
// that another process is appending to: a torn tail there may be a record still being
// written, so read again from good_bytes later). Offsets in the result are absolute. A
// missing file reads as empty and clean. Throws IoError only when the file exists but
// cannot be read.
// Resynchronisation cost: a candidate frame start costs one 4-byte checksum; a damaged
// range of n bytes costs O(n) such checks plus one payload checksum per false candidate.
LogReadResult read_framed_log(const std::string& path, uint64_t offset = 0);
// The same for the bytes of a log from byte `offset` on, held in memory (the reader above
// and the fuzz target use it). file_bytes = offset + data.size().
LogReadResult parse_framed_log(std::string_view data, uint64_t offset = 0);

}  // namespace mnemo::io
