// The caps of docs/reliability.md#caps, one test each: exactly at the cap is accepted, one
// past is rejected with a message naming the limit; and session paths that would leave the
// session (symbolic links, a `latest` naming something else) are not followed.
#include "core/data/document.h"
#include "core/io/framed_log.h"
#include "core/io/safetensors.h"
#include "core/io/session.h"
#include "core/train/recording_layout.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

using namespace mnemo;
using namespace mnemo::io;

namespace {

// A safetensors file in memory: the 8-byte length, `header`, then `data`.
std::string st_bytes(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("cap: a safetensors header of exactly kMaxHeaderBytes is read - one byte more is refused unread") {
  std::string header = "{}";
  header.resize(kMaxHeaderBytes, ' ');
  CHECK(parse_safetensors_bytes("at-cap.safetensors", st_bytes(header)).entries.empty());
  // One past: refused from the length prefix alone (no 100 MiB read or allocated).
  std::string past(8, '\0');
  const uint64_t n = kMaxHeaderBytes + 1;
  for (int i = 0; i < 8; ++i) past[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  past += "{}";
  CHECK_THROWS_WITH_AS(parse_safetensors_bytes("past.safetensors", past),
                       "past.safetensors: header length 104857601 bytes exceeds the limit of 104857600 bytes; the "
                       "file is corrupt or not a safetensors file",
                       SafetensorsError);
}

TEST_CASE("cap: kMaxTensors tensors in one file are read - one more is refused") {
  auto header_of = [](size_t n) {
    std::string h = "{";
    for (size_t i = 0; i < n; ++i)
      h += (i ? "," : "") + std::string("\"t") + std::to_string(i) + "\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}";
    return h + ",\"__metadata__\":{\"k\":\"v\"}}";
  };
  const auto h = parse_safetensors_bytes("many.safetensors", st_bytes(header_of(kMaxTensors)));
  CHECK(h.entries.size() == kMaxTensors);
  CHECK(h.metadata.at("k") == "v");
  CHECK_THROWS_WITH_AS(parse_safetensors_bytes("toomany.safetensors", st_bytes(header_of(kMaxTensors + 1))),
                       "toomany.safetensors: header lists 65537 tensors, over the limit of 65536", SafetensorsError);
  // The whole loader (with LibTorch) gives the same message for a file.
  const std::string dir = test::temp_dir("cap-tensors");
  write_file(dir + "/t.safetensors", st_bytes(header_of(kMaxTensors + 1)));
  CHECK_THROWS_WITH_AS(load_safetensors(dir + "/t.safetensors"), doctest::Contains("over the limit of 65536"),
                       SafetensorsError);
}

TEST_CASE("cap: a tensor of kMaxRank dimensions is read - one more dimension is refused") {
  auto file_of = [](size_t rank) {
    std::string shape;
    for (size_t i = 0; i < rank; ++i) shape += (i ? "," : "") + std::string("1");
    return st_bytes("{\"x\":{\"dtype\":\"F32\",\"shape\":[" + shape + "],\"data_offsets\":[0,4]}}", std::string(4, '\0'));
  };
  const std::string dir = test::temp_dir("cap-rank");
  write_file(dir + "/ok.safetensors", file_of(kMaxRank));
  const auto t = load_safetensors(dir + "/ok.safetensors");
  REQUIRE(t.size() == 1);
  CHECK(t[0].second.dim() == static_cast<int64_t>(kMaxRank));
  write_file(dir + "/bad.safetensors", file_of(kMaxRank + 1));
  CHECK_THROWS_WITH_AS(load_safetensors(dir + "/bad.safetensors"),
                       (dir + "/bad.safetensors: tensor 'x': shape has 17 dimensions, over the limit of 16").c_str(),
                       SafetensorsError);
}

TEST_CASE("cap: a document of exactly kMaxDocumentBytes opens - one byte more is refused before reading") {
  const std::string dir = test::temp_dir("cap-doc");
  const std::string at = dir + "/at.bin", past = dir + "/past.bin";
  for (const auto& [p, n] : {std::pair<std::string, int64_t>{at, kMaxDocumentBytes}, {past, kMaxDocumentBytes + 1}}) {
    const int fd = ::open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, n) == 0);  // sparse: costs no disk
    ::close(fd);
  }
  {
    const Document d = load_document(at);
    CHECK(d.size() == kMaxDocumentBytes);
    CHECK(d.id(kMaxDocumentBytes - 1) == 0);
    CHECK(d.offset(kMaxDocumentBytes - 1) == std::pair<int64_t, int64_t>{kMaxDocumentBytes - 1, kMaxDocumentBytes});
  }
  CHECK_THROWS_WITH_AS(load_document(past),
                       ("document '" + past + "' is 256 MiB, over the 256 MiB limit; split it or pass a smaller file").c_str(),
                       DocumentError);
}

TEST_CASE("cap: a metrics record of exactly kMaxRecordBytes round-trips - one byte more is refused by the writer") {
  const std::string dir = test::temp_dir("cap-log");
  const std::string path = dir + "/metrics.log";
  {
    FramedLogWriter w(path);
    w.append(std::string(kMaxRecordBytes, 'x'));
    CHECK_THROWS_WITH_AS(w.append(std::string(kMaxRecordBytes + 1, 'x')),
                         (path + ": log record of 67108865 bytes is over the 64 MiB limit").c_str(), IoError);
    w.append("after");
  }
  const auto r = read_framed_log(path);
  CHECK(r.clean);
  REQUIRE(r.records.size() == 2);
  CHECK(r.records[0].size() == kMaxRecordBytes);
  CHECK(r.records[1] == "after");
  // A frame that claims one byte more (with a valid length checksum) is damage to the reader.
  std::string head(8, '\0');
  const uint32_t len = kMaxRecordBytes + 1;
  for (int i = 0; i < 4; ++i) head[static_cast<size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xff);
  const uint32_t crc = mask_crc(crc32c(head.data(), 4));
  for (int i = 0; i < 4; ++i) head[static_cast<size_t>(4 + i)] = static_cast<char>((crc >> (8 * i)) & 0xff);
  const auto bad = parse_framed_log(head, 0);
  CHECK(bad.records.empty());
  CHECK(bad.stop_reason == "record length 67108865 over the limit at byte 0");
}

TEST_CASE("cap: a manifest of exactly kMaxManifestBytes opens - one byte more is refused") {
  const std::string base = test::temp_dir("cap-manifest");
  auto manifest_of = [](size_t n) {
    std::string m = R"({"format_version": 1})";
    m.resize(n, ' ');
    return m;
  };
  Session::create(base + "/at", {});
  write_file(base + "/at/manifest.json", manifest_of(kMaxManifestBytes));
  CHECK(Session::open(base + "/at", 3, SessionAccess::kReadOnly).manifest()["format_version"] == 1);
  Session::create(base + "/past", {});
  write_file(base + "/past/manifest.json", manifest_of(kMaxManifestBytes + 1));
  CHECK_THROWS_WITH_AS(Session::open(base + "/past", 3, SessionAccess::kReadOnly),
                       (base + "/past/manifest.json: manifest is larger than the limit of 1048576 bytes; it is not a "
                               "session manifest").c_str(),
                       SessionError);
}

TEST_CASE("cap: a recording of kMaxRecordingSegments segments is read - one more is refused") {
  auto layout_of = [](int64_t n) {
    std::vector<RecordingTensorInfo> t = {{"probe.bytes", "U8", {n}}, {"s" + std::to_string(n - 1) + "/lm.loss", "F32", {1, 1}}};
    std::map<std::string, std::string> meta = {
        {"probe", "{\"segments\": " + std::to_string(n) + ", \"segment_len\": 1}"}, {"step", "7"}};
    return parse_recording_layout(t, meta, "rec");
  };
  const auto l = layout_of(kMaxRecordingSegments);
  CHECK(l.segments == kMaxRecordingSegments);
  CHECK(l.train_step == 7);
  REQUIRE(l.traced.size() == 1);
  CHECK(l.traced[0].segment == kMaxRecordingSegments - 1);
  CHECK_THROWS_WITH_AS(layout_of(kMaxRecordingSegments + 1), doctest::Contains("recording 'rec' has absurd probe sizes"),
                       std::runtime_error);
}

TEST_CASE("session paths: symbolic links below the session are not followed - latest only names a listed step") {
  const std::string base = test::temp_dir("sess-links");
  const std::string dir = base + "/run", outside = base + "/outside";
  auto s = Session::create(dir, {});
  s.save_checkpoint(10, {{"w", torch::ones({2})}});
  ::mkdir(outside.c_str(), 0755);
  Session::create(outside + "/other", {}).save_checkpoint(99, {{"w", torch::zeros({2})}});
  // A checkpoint that is a link to a file outside: listed as skipped, never loaded.
  REQUIRE(::symlink((outside + "/other/checkpoints/step-000000099.safetensors").c_str(),
                    (dir + "/checkpoints/step-000000099.safetensors").c_str()) == 0);
  CHECK(s.checkpoint_steps() == std::vector<int64_t>{10});
  auto l = s.load_latest();
  REQUIRE(l);
  CHECK(l->step == 10);
  REQUIRE(l->skipped.size() == 1);
  CHECK(l->skipped[0].find("'checkpoints/step-000000099.safetensors' is a symbolic link") != std::string::npos);
  // `latest` naming a path outside is only a name: it matches no listed step and is reported.
  write_file(dir + "/checkpoints/latest", "../../outside/other/checkpoints/step-000000099.safetensors\n");
  auto l2 = Session::open(dir, 3, SessionAccess::kReadOnly).load_latest();
  REQUIRE(l2);
  CHECK(l2->step == 10);
  CHECK(parse_latest_pointer("../x/step-000000010.safetensors") == std::nullopt);
  CHECK(parse_latest_pointer("step-000000010.safetensors\n") == 10);
  // metrics.log or the traces folder as links out of the session: not read.
  ::unlink((dir + "/metrics.log").c_str());
  REQUIRE(::symlink((outside + "/other/metrics.log").c_str(), (dir + "/metrics.log").c_str()) == 0);
  CHECK_THROWS_WITH_AS(Session::open(dir, 3, SessionAccess::kReadOnly).read_metrics(),
                       doctest::Contains("'metrics.log' is a symbolic link"), SessionError);
  CHECK_THROWS_WITH_AS(Session::open(dir), doctest::Contains("a session writes only inside its directory"), SessionError);
  ::rmdir((dir + "/traces").c_str());
  REQUIRE(::symlink((outside + "/other/traces").c_str(), (dir + "/traces").c_str()) == 0);
  CHECK(Session::open(dir, 3, SessionAccess::kReadOnly).trace_steps().empty());
  // A manifest that is a link is refused too.
  ::unlink((dir + "/manifest.json").c_str());
  REQUIRE(::symlink((outside + "/other/manifest.json").c_str(), (dir + "/manifest.json").c_str()) == 0);
  CHECK_THROWS_WITH_AS(Session::open(dir, 3, SessionAccess::kReadOnly), doctest::Contains("'manifest.json' is a symbolic link"),
                       SessionError);
  CHECK(outside_session(dir, "../outside") == "'../outside' is not a path inside the session");
}

// Fuzzing found these (docs/reliability.md#fuzzing); each input is kept in
// fuzz/regressions/<target>/ and runs here through the loader the target exercises.
TEST_CASE("fuzz regressions: a number too large for a double is a named rejection, not an internal error") {
  for (const char* name : {"manifest-number-overflow", "manifest-exponent-overflow"}) {
    const std::string input = test::read_file(std::string(MNEMO_SOURCE_DIR) + "/fuzz/regressions/session/" + name);
    REQUIRE_FALSE(input.empty());
    CAPTURE(input);
    // The fuzz target reads the input up to a NUL byte as manifest.json.
    CHECK_THROWS_WITH_AS(parse_session_manifest(input.substr(0, input.find('\0')), "m.json"),
                         doctest::Contains("m.json: manifest is not valid JSON ("), SessionError);
  }
  // The same overflow in a whole session: its manifest, and a metrics record.
  const std::string dir = test::temp_dir("overflow") + "/run";
  {
    auto s = Session::create(dir, {});
    s.append_metrics({{"type", "step"}, {"step", 1}, {"loss", 1.0}});
    FramedLogWriter(dir + "/metrics.log").append(R"({"type":"step","step":2,"loss":1e999})");
    s.append_metrics({{"type", "step"}, {"step", 3}, {"loss", 0.5}});
  }
  LogReadResult read;
  const auto recs = Session::open(dir, 3, SessionAccess::kReadOnly).read_metrics(&read);
  CHECK(recs.size() == 2);
  REQUIRE(read.gaps.size() == 1);
  CHECK(read.gaps[0].reason == "record is not valid JSON");
  write_file(dir + "/manifest.json", R"({"format_version": 1, "x": 2E645})");
  CHECK_THROWS_WITH_AS(Session::open(dir, 3, SessionAccess::kReadOnly), doctest::Contains("manifest is not valid JSON"),
                       SessionError);
}
