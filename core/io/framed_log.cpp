#include "core/io/framed_log.h"

#include "core/io/read_file.h"

#include "core/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string_view>

namespace mnemo::io {

namespace {

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}


}  // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> table = make_table();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

FramedLogWriter::FramedLogWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError(path + ": cannot open log for appending: " + errno_text(errno));
}

FramedLogWriter::~FramedLogWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void FramedLogWriter::append(const std::string& payload, bool sync) {
  if (payload.size() > kMaxRecordBytes)
    throw IoError(path_ + ": log record of " + std::to_string(payload.size()) + " bytes is over the 64 MiB limit");
  std::string frame;
  frame.reserve(payload.size() + 12);
  const uint32_t len = static_cast<uint32_t>(payload.size());
  put_u32(frame, len);
  put_u32(frame, mask_crc(crc32c(frame.data(), 4)));
  frame += payload;
  put_u32(frame, mask_crc(crc32c(payload.data(), payload.size())));
  size_t done = 0;
  while (done < frame.size()) {
    ssize_t n = ::write(fd_, frame.data() + done, frame.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(path_ + ": cannot append to log: " + errno_text(errno));
    }
    done += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd_) != 0) throw IoError(path_ + ": fsync failed: " + errno_text(errno));
}

std::string describe_gap(const LogGap& g) {
  return "bytes " + std::to_string(g.begin) + "-" + std::to_string(g.end) + " (" + g.reason + ")";
}

namespace {

enum class Frame { kOk, kTorn, kDamaged };

// Checks the frame that would start at `at`: its length is stored in *len. `why` (when not
// null) gets the fault.
Frame check_frame(std::string_view d, size_t at, uint32_t* len, std::string* why) {
  // `why` is built only when asked for: the resynchronising scan calls this at every byte.
  if (d.size() - at < 8) {
    if (why) *why = "torn tail: incomplete record header";
    return Frame::kTorn;
  }
  *len = get_u32(d, at);
  if (mask_crc(crc32c(d.data() + at, 4)) != get_u32(d, at + 4)) {
    if (why) *why = "checksum mismatch in record length";
    return Frame::kDamaged;
  }
  if (*len > kMaxRecordBytes) {
    if (why) *why = "record length " + std::to_string(*len) + " over the limit";
    return Frame::kDamaged;
  }
  if (d.size() - at - 8 < static_cast<size_t>(*len) + 4) {
    if (why) *why = "torn tail: record of " + std::to_string(*len) + " bytes is incomplete";
    return Frame::kTorn;
  }
  if (mask_crc(crc32c(d.data() + at + 8, *len)) != get_u32(d, at + 8 + *len)) {
    if (why) *why = "checksum mismatch in record payload";
    return Frame::kDamaged;
  }
  return Frame::kOk;
}

}  // namespace

LogReadResult read_framed_log(const std::string& path, uint64_t offset) {
  LogReadResult r;
  std::string why;
  uint64_t size = 0;
  const int fd = open_regular_file(path, &why, &size);  // a FIFO is refused, not waited on
  if (fd < 0) {
    if (why == kNoSuchFile) return r;
    throw IoError(path + ": cannot read log: it " + why);
  }
  r.file_bytes = size;
  r.good_bytes = offset;
  if (offset > size) {  // the file was cut (a resume repaired its tail): read it again from 0
    ::close(fd);
    r.clean = false;
    r.shrunk = true;
    r.good_bytes = 0;
    r.stop_reason = "the log is shorter (" + std::to_string(size) + " bytes) than the offset " + std::to_string(offset);
    return r;
  }
  // Read from the descriptor that was checked (never a second open by path).
  std::string data;
  if (::lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0) why = "cannot be read: " + errno_text(errno);
  else why = read_to_end(fd, &data, std::numeric_limits<std::uint64_t>::max());
  ::close(fd);
  if (!why.empty()) throw IoError(path + ": cannot read log: it " + why);
  LogReadResult parsed = parse_framed_log(data, offset);
  parsed.file_bytes = size;
  return parsed;
}

LogReadResult parse_framed_log(std::string_view data, uint64_t offset) {
  LogReadResult r;
  r.file_bytes = offset + data.size();
  r.good_bytes = offset;
  size_t at = 0;
  while (at < data.size()) {
    uint32_t len = 0;
    std::string why;
    const Frame f = check_frame(data, at, &len, &why);
    if (f == Frame::kOk) {
      r.records.emplace_back(data.data() + at + 8, len);
      r.offsets.push_back(offset + at);
      at += 8 + static_cast<size_t>(len) + 4;
      r.good_bytes = offset + at;
      continue;
    }
    size_t next = data.size();
    if (f == Frame::kDamaged) {
      // Resynchronise: the next position where a whole frame checks out.
      for (size_t p = at + 1; p + 12 <= data.size(); ++p) {
        uint32_t l = 0;
        if (check_frame(data, p, &l, nullptr) == Frame::kOk) {
          next = p;
          break;
        }
      }
    }
    if (next == data.size()) {  // a torn tail, or damage no whole frame follows
      r.clean = false;
      r.stop_reason = why + " at byte " + std::to_string(offset + at);
      break;
    }
    r.clean = false;
    r.gaps.push_back({offset + at, offset + next, why});
    at = next;
  }
  return r;
}

}  // namespace mnemo::io
