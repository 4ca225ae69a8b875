// core/io: framed metrics log and crash-safe session directories.
#include "core/io/atomic_file.h"
#include "core/io/framed_log.h"
#include "core/io/session.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>

using namespace mnemo;
using namespace mnemo::io;

namespace {

std::string read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_all_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

NamedTensors weights(float v) { return {{"w", torch::full({64, 64}, v)}, {"step_count", torch::tensor({int64_t(v)})}}; }

}  // namespace

TEST_CASE("crc32c matches the standard check value - masking is not the identity") {
  const char* s = "123456789";
  CHECK(crc32c(s, 9) == 0xE3069283u);
  CHECK(crc32c("", 0) == 0u);
  CHECK(mask_crc(0xE3069283u) != 0xE3069283u);
}

TEST_CASE("framed log: a torn tail ends reading - a flipped byte loses only its own record") {
  const std::string dir = test::temp_dir("log");
  const std::string path = dir + "/metrics.log";
  std::vector<std::string> recs = {R"({"step":1})", R"({"step":2,"loss":1.5})", std::string(300, 'x'), "", R"({"step":5})"};
  {
    FramedLogWriter w(path);
    for (const auto& r : recs) w.append(r);
  }
  auto full = read_framed_log(path);
  CHECK(full.clean);
  CHECK(full.records == recs);
  CHECK(full.good_bytes == full.file_bytes);
  CHECK(full.stop_reason.empty());
  const std::string bytes = read_all(path);
  const size_t last_start = bytes.size() - (8 + recs[4].size() + 4);
  // Torn tail: cut anywhere inside the last record.
  for (size_t cut = last_start + 1; cut < bytes.size(); ++cut) {
    write_all_bytes(path, bytes.substr(0, cut));
    auto r = read_framed_log(path);
    CAPTURE(cut);
    CHECK_FALSE(r.clean);
    CHECK(r.records.size() == 4);
    CHECK(r.gaps.empty());
    CHECK(r.good_bytes == last_start);
    CHECK(r.torn_tail());
    CHECK(r.stop_reason == std::string("torn tail: ") +
                               (cut - last_start < 8 ? "incomplete record header" : "record of 10 bytes is incomplete") +
                               " at byte " + std::to_string(last_start));
  }
  // A flipped byte anywhere in record 1: it is skipped as one gap, every other record is read.
  const size_t r1_start = 8 + recs[0].size() + 4;
  const size_t r1_end = r1_start + 8 + recs[1].size() + 4;
  for (size_t at = r1_start; at < r1_end; ++at) {
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
    write_all_bytes(path, damaged);
    auto r = read_framed_log(path);
    CAPTURE(at);
    CHECK_FALSE(r.clean);
    CHECK(r.records == std::vector<std::string>{recs[0], recs[2], recs[3], recs[4]});
    CHECK(r.offsets == std::vector<uint64_t>{0, r1_end, r1_end + 312, r1_end + 324});
    CHECK(r.good_bytes == bytes.size());
    CHECK(r.stop_reason.empty());
    REQUIRE(r.gaps.size() == 1);
    const std::string part = at < r1_start + 8 ? "length" : "payload";
    CHECK(describe_gap(r.gaps[0]) == "bytes " + std::to_string(r1_start) + "-" + std::to_string(r1_end) +
                                         " (checksum mismatch in record " + part + ")");
  }
  // The last record damaged: no whole record follows, so reading stops there (a damaged tail).
  {
    std::string damaged = bytes;
    damaged[last_start + 9] ^= 0x01;
    write_all_bytes(path, damaged);
    auto r = read_framed_log(path);
    CHECK(r.records.size() == 4);
    CHECK(r.good_bytes == last_start);
    CHECK_FALSE(r.torn_tail());
    CHECK(r.stop_reason == "checksum mismatch in record payload at byte " + std::to_string(last_start));
  }
  CHECK(read_framed_log(dir + "/missing.log").clean);
}

TEST_CASE("framed log: damage at every byte offset of a 200-record log loses only the damaged record") {
  const std::string dir = test::temp_dir("log200");
  const std::string path = dir + "/metrics.log";
  std::vector<std::string> recs;
  std::vector<size_t> starts;
  size_t at = 0;
  for (int i = 0; i < 200; ++i) {
    recs.push_back("{\"step\":" + std::to_string(i) + (i % 3 ? ",\"loss\":0.5}" : "}"));
    starts.push_back(at);
    at += 12 + recs.back().size();
  }
  {
    FramedLogWriter w(path);
    for (const auto& r : recs) w.append(r);
  }
  const std::string bytes = read_all(path);
  REQUIRE(bytes.size() == at);
  size_t failures = 0;
  // In memory (read_framed_log reads the file and runs the same parse_framed_log).
  for (size_t off = 0; off < bytes.size(); ++off) {
    std::string damaged = bytes;
    damaged[off] = static_cast<char>(damaged[off] ^ 0xA5);
    const auto r = parse_framed_log(damaged, 0);
    const size_t k = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), off) - starts.begin()) - 1;
    std::vector<std::string> want = recs;
    want.erase(want.begin() + static_cast<std::ptrdiff_t>(k));
    if (r.records != want) {
      if (++failures <= 5) FAIL_CHECK("damage at byte " << off << " (record " << k << "): " << r.records.size() << " records read");
      continue;
    }
    // The damage is named: a gap over exactly that record, or the tail when it was the last one.
    if (k + 1 < recs.size()) {
      CHECK((r.gaps.size() == 1 && r.gaps[0].begin == starts[k] && r.gaps[0].end == starts[k + 1]));
    } else {
      CHECK(r.stop_reason.find("at byte " + std::to_string(starts[k])) != std::string::npos);
    }
  }
  CHECK(failures == 0);
  // 64 scrambled bytes in the middle: the records they touch are lost, every later one is read.
  std::string scrambled = bytes;
  const size_t mid = bytes.size() / 2;
  for (size_t i = 0; i < 64; ++i) scrambled[mid + i] = static_cast<char>((i * 37 + 11) & 0xff);
  write_all_bytes(path, scrambled);
  const auto r = read_framed_log(path);  // this one from the file
  const size_t first = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), mid) - starts.begin()) - 1;
  const size_t last = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), mid + 63) - starts.begin()) - 1;
  CHECK(r.records.size() == 200 - (last - first + 1));
  CHECK(r.records.back() == recs.back());
  REQUIRE(r.gaps.size() == 1);
  CHECK(r.gaps[0].begin == starts[first]);
  CHECK(r.gaps[0].end == starts[last + 1]);
}

TEST_CASE("session: checkpoints are atomic, pruned to keep_last, and latest falls back past corruption") {
  const std::string dir = test::temp_dir("sess") + "/run";
  auto s = Session::create(dir, {{"model", {{"slots", 4}}}}, 3);
  CHECK(s.manifest()["format_version"] == kSessionFormatVersion);
  CHECK_THROWS_WITH_AS(Session::create(dir, {}), doctest::Contains("not empty"), SessionError);
  CHECK_FALSE(s.load_latest().has_value());
  for (int step : {10, 20, 30, 40}) s.save_checkpoint(step, weights(static_cast<float>(step)), {{"note", "x"}});
  CHECK(s.checkpoint_steps() == std::vector<int64_t>{20, 30, 40});
  auto l = s.load_latest();
  REQUIRE(l);
  CHECK(l->step == 40);
  CHECK(l->metadata.at("step") == "40");
  CHECK(l->tensors[0].second[0][0].item<float>() == 40.f);
  CHECK(l->skipped.empty());
  // Corrupt the newest: truncated file.
  const std::string newest = s.checkpoint_path(40);
  write_all_bytes(newest, read_all(newest).substr(0, 100));
  auto reopened = Session::open(dir);
  auto fb = reopened.load_latest();
  REQUIRE(fb);
  CHECK(fb->step == 30);
  REQUIRE(fb->skipped.size() == 1);
  CHECK(fb->skipped[0].find("step-000000040.safetensors") != std::string::npos);
  // latest naming a missing file also falls back, saying so.
  ::unlink(newest.c_str());
  auto fb2 = Session::open(dir).load_latest();
  REQUIRE(fb2);
  CHECK(fb2->step == 30);
  CHECK(fb2->skipped.at(0).find("missing") != std::string::npos);
  // Nothing loads: a clear error naming the files.
  write_all_bytes(s.checkpoint_path(30), "garbage");
  write_all_bytes(s.checkpoint_path(20), "");
  CHECK_THROWS_WITH_AS(s.load_latest(), doctest::Contains("no checkpoint loads"), SessionError);
}

TEST_CASE("session: load_latest takes the newest checkpoint that loads, not an older one latest names - an unreadable "
          "newer one is reported apart from a damaged one") {
  const std::string dir = test::temp_dir("sess-newest") + "/run";
  auto s = Session::create(dir, {}, 3);
  for (int step : {16, 18, 20}) s.save_checkpoint(step, weights(static_cast<float>(step)));
  // latest naming step 16 while 18 and 20 exist (a crash between a checkpoint and latest, or an edit).
  write_all_bytes(dir + "/checkpoints/latest", "step-000000016.safetensors\n");
  auto l = s.load_latest();
  REQUIRE(l);
  CHECK(l->step == 20);
  CHECK(l->latest_names == 16);
  CHECK(l->tensors[0].second[0][0].item<float>() == 20.f);
  CHECK(l->unreadable.empty());
  // The newest cannot be read at all (here a directory where the file was; for a user without
  // permission it is open()'s EACCES): taken as unreadable, not damaged; the next one loads.
  const std::string newest = s.checkpoint_path(20);
  REQUIRE(::unlink(newest.c_str()) == 0);
  REQUIRE(::mkdir(newest.c_str(), 0755) == 0);
  auto u = s.load_latest();
  REQUIRE(u);
  CHECK(u->step == 18);
  REQUIRE(u->unreadable.size() == 1);
  CHECK(u->unreadable[0] == newest + ": cannot be read: it is a directory, not a file");
  CHECK(u->skipped == u->unreadable);
  // A damaged one is skipped but is not unreadable.
  ::rmdir(newest.c_str());
  write_all_bytes(newest, "garbage");
  auto d = s.load_latest();
  REQUIRE(d);
  CHECK(d->step == 18);
  CHECK(d->unreadable.empty());
  REQUIRE(d->skipped.size() == 1);
  CHECK(d->skipped[0].find("step-000000020.safetensors") != std::string::npos);
}

TEST_CASE("session: stale temp files from a crash are removed on open - metrics round-trip") {
  const std::string dir = test::temp_dir("sess2") + "/run";
  {
    auto s = Session::create(dir, {});
    s.append_metrics({{"step", 1}, {"loss", 2.5}});
    s.append_metrics({{"step", 2}, {"loss", std::nan("")}});  // NaN is stored as null by JSON
  }
  write_all_bytes(dir + "/checkpoints/.step-000000005.safetensors.tmp-123-abc", "half");
  auto s = Session::open(dir);
  CHECK(read_all(dir + "/checkpoints/.step-000000005.safetensors.tmp-123-abc").empty());
  LogReadResult rr;
  auto m = s.read_metrics(&rr);
  CHECK(rr.clean);
  REQUIRE(m.size() == 2);
  CHECK(m[0]["loss"].get<double>() == 2.5);
  CHECK(m[1]["loss"].is_null());
  CHECK_THROWS_WITH_AS(Session::open(test::temp_dir("empty")), doctest::Contains("not a session"), SessionError);
}

TEST_CASE("session: a full disk gives a clear error and damages nothing saved before") {
  const std::string dir = test::temp_dir("sess3") + "/run";
  {
    auto s = Session::create(dir, {});
    s.save_checkpoint(1, weights(1.f));
  }
  // A child process with a 64 KiB file-size limit stands in for a full disk.
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{64 * 1024, 64 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    try {
      auto s = Session::open(dir);
      s.save_checkpoint(2, {{"big", torch::zeros({200000})}});
      std::_Exit(10);  // must not succeed
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      std::_Exit(msg.find("step-000000002") != std::string::npos && msg.find("too large") != std::string::npos ? 0 : 11);
    }
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  auto s = Session::open(dir);
  auto l = s.load_latest();
  REQUIRE(l);
  CHECK(l->step == 1);
  CHECK(s.checkpoint_steps() == std::vector<int64_t>{1});
}

TEST_CASE("session: a torn metrics tail is cut on repair so records appended after a resume are readable - read-only opens write nothing") {
  const std::string dir = test::temp_dir("sess4") + "/run";
  {
    auto s = Session::create(dir, {});
    s.append_metrics({{"type", "step"}, {"step", 1}});
    s.append_metrics({{"type", "step"}, {"step", 2}});
  }
  // A crash in the middle of an append: half a record at the end.
  {
    std::ofstream f(dir + "/metrics.log", std::ios::app | std::ios::binary);
    f.write("\x20\x00\x00\x00\x11\x22", 6);
  }
  // A temp file of an interrupted checkpoint write.
  std::ofstream(dir + "/checkpoints/.step-000000003.safetensors.tmp-1") << "partial";
  {
    auto ro = Session::open(dir, 3, SessionAccess::kReadOnly);
    CHECK(ro.read_only());
    CHECK(mnemo::test::path_exists(dir + "/checkpoints/.step-000000003.safetensors.tmp-1"));  // a live writer may own it
    CHECK_THROWS_WITH_AS(ro.append_metrics({{"type", "x"}}), doctest::Contains("opened read-only"), SessionError);
    CHECK_THROWS_AS(ro.save_checkpoint(3, weights(1.f)), SessionError);
    LogReadResult r;
    CHECK(ro.read_metrics(&r).size() == 2);
    CHECK_FALSE(r.clean);
  }
  auto s = Session::open(dir);
  CHECK_FALSE(mnemo::test::path_exists(dir + "/checkpoints/.step-000000003.safetensors.tmp-1"));
  const std::string cut = s.repair_metrics_log();
  CHECK(cut.find("dropped 6 damaged bytes") != std::string::npos);
  CHECK(s.repair_metrics_log().empty());  // clean now
  s.append_metrics({{"type", "resume"}, {"step", 2}});
  s.append_metrics({{"type", "step"}, {"step", 3}});
  LogReadResult r;
  auto recs = s.read_metrics(&r);
  CHECK(r.clean);
  REQUIRE(recs.size() == 4);
  CHECK(recs[3]["step"] == 3);
}

TEST_CASE("framed log: following a growing log from the last good offset returns each record once") {
  const std::string dir = test::temp_dir("follow");
  const std::string path = dir + "/metrics.log";
  FramedLogWriter w(path);
  w.append("a");
  w.append("bb");
  auto r1 = read_framed_log(path);
  CHECK(r1.records == std::vector<std::string>{"a", "bb"});
  // A record being written: only part of it is there yet.
  {
    std::ofstream f(path, std::ios::app | std::ios::binary);
    f.write("\x03\x00", 2);
  }
  auto r2 = read_framed_log(path, r1.good_bytes);
  CHECK(r2.records.empty());
  CHECK(r2.good_bytes == r1.good_bytes);
  CHECK(r2.stop_reason.find("byte " + std::to_string(r1.good_bytes)) != std::string::npos);
  // The writer finishes (here: the partial bytes are replaced by a whole record).
  write_all_bytes(path, read_all(path).substr(0, r1.good_bytes));
  FramedLogWriter w2(path);
  w2.append("ccc");
  auto r3 = read_framed_log(path, r2.good_bytes);
  CHECK(r3.clean);
  CHECK(r3.records == std::vector<std::string>{"ccc"});
  CHECK(r3.good_bytes == r3.file_bytes);
  // A log cut below the offset (a resume repaired it) says so; the follower starts over.
  auto r4 = read_framed_log(path, r3.file_bytes + 100);
  CHECK(r4.shrunk);
  CHECK(r4.records.empty());
  CHECK(r4.good_bytes == 0);
}
