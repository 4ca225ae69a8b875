#include "core/io/framed_log.h"

#include "core/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

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

uint32_t get_u32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

std::string errno_text(int e) { return std::strerror(e); }

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

LogReadResult read_framed_log(const std::string& path, uint64_t offset) {
  LogReadResult r;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return r;
    throw IoError(path + ": cannot read log: " + errno_text(errno));
  }
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(std::max<std::streamoff>(0, in.tellg()));
  r.file_bytes = size;
  r.good_bytes = offset;
  if (offset > size) {  // the file was cut (a resume repaired its tail): read it again from 0
    r.clean = false;
    r.shrunk = true;
    r.good_bytes = 0;
    r.stop_reason = "the log is shorter (" + std::to_string(size) + " bytes) than the offset " + std::to_string(offset);
    return r;
  }
  in.seekg(static_cast<std::streamoff>(offset));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = 0;
  auto stop = [&](const std::string& why) {
    r.clean = false;
    r.stop_reason = why + " at byte " + std::to_string(offset + at) + " (after record " + std::to_string(r.records.size()) + ")";
  };
  while (at < data.size()) {
    if (data.size() - at < 8) {
      stop("torn tail: incomplete record header");
      break;
    }
    const uint32_t len = get_u32(data, at);
    if (mask_crc(crc32c(data.data() + at, 4)) != get_u32(data, at + 4)) {
      stop("checksum mismatch in record length");
      break;
    }
    if (len > kMaxRecordBytes) {
      stop("record length " + std::to_string(len) + " over the limit");
      break;
    }
    if (data.size() - at - 8 < static_cast<size_t>(len) + 4) {
      stop("torn tail: record of " + std::to_string(len) + " bytes is incomplete");
      break;
    }
    const char* payload = data.data() + at + 8;
    if (mask_crc(crc32c(payload, len)) != get_u32(data, at + 8 + len)) {
      stop("checksum mismatch in record payload");
      break;
    }
    r.records.emplace_back(payload, len);
    at += 8 + static_cast<size_t>(len) + 4;
    r.good_bytes = offset + at;
  }
  return r;
}

}  // namespace mnemo::io
