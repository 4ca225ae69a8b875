// `train --data` on the "text" task (core/data/text_task.h): bad corpora exit 2 naming the
// path and write nothing; a corpus of 1 GiB (a sparse file) trains a step in bounded memory.
#include "core/io/atomic_file.h"
#include "core/io/session.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

using namespace mnemo;

namespace {

// A tiny Memformer on the text task, one step, no evaluations or recordings beyond the end.
std::string tiny_text_config(const std::string& dir) {
  nlohmann::json j = {
      {"model", {{"model", "memformer"}, {"slots", 4}, {"segment_len", 16}, {"dim", 16}, {"heads", 2}, {"layers", 1},
                 {"dec_layers", 1}, {"ff", 32}, {"n_cls", 1}}},
      {"task", {{"name", "text"}, {"corpus", "sotu"}, {"length", 32}, {"segments", 2}}},
      {"train", {{"steps", 1}, {"batch", 4}, {"eval_every", 0}, {"eval_batches", 1}, {"record_every", 0}}}};
  const std::string path = dir + "/text-tiny.json";
  test::write_file(path, j.dump());
  return path;
}

}  // namespace

TEST_CASE("train --data: bad corpora exit 2 naming the path, and write nothing") {
  const std::string dir = test::temp_dir("train-text-bad");
  const std::string cfg = tiny_text_config(dir);
  test::write_file(dir + "/empty.txt", "");
  test::write_file(dir + "/bin.dat", std::string("\0\1\2\3", 4));
  io::make_dirs(dir + "/nothing");
  test::write_file(dir + "/nothing/a.bin", std::string(64, '\0'));
  REQUIRE(::symlink((dir + "/loop").c_str(), (dir + "/loop").c_str()) == 0);
  const std::pair<std::string, std::string> cases[] = {
      {dir + "/missing.txt", "does not exist"},
      {dir + "/empty.txt", "is empty"},
      {dir + "/bin.dat", "is a binary file"},
      {dir + "/nothing", "is a directory without text files (1 binary files)"},
      {dir + "/loop", "cannot be read"},
  };
  int n = 0;
  for (const auto& [path, what] : cases) {
    CAPTURE(path);
    const std::string out = dir + "/out-" + std::to_string(n++);
    const auto r = test::run_cli("train --config " + cfg + " --data " + path + " --out " + out);
    CHECK(r.code == 2);
    CHECK(r.output.find("'" + path + "' " + what) != std::string::npos);
    CHECK(!test::path_exists(out));
  }
  // --data on a config of another task says so.
  const std::string copy = std::string(MNEMO_SOURCE_DIR) + "/sessions/copy-rmt-tiny.json";
  const auto r = test::run_cli("train --config " + copy + " --data " + dir + "/x.txt --out " + dir + "/out-copy");
  CHECK(r.code == 2);
  CHECK(r.output.find("--data sets the corpus of a \"text\" task") != std::string::npos);
}

TEST_CASE("train --data: a 1 GiB sparse corpus trains a step with peak RSS under 512 MiB") {
  // The file is 1 GiB: text in its first 64 KiB (the text check reads that much) and in
  // blocks at a few offsets, zeros (holes) elsewhere. Reading it whole, or mapping it and
  // touching every page, would put 1 GiB into the process; sampling windows touches a few pages.
  const std::string dir = test::temp_dir("train-text-big");
  const std::string big = dir + "/big.txt";
  const int64_t size = int64_t{1} << 30;
  {
    const int fd = ::open(big.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, size) == 0);
    std::string block;
    while (block.size() < (size_t{1} << 17)) block += "Call me Ishmael. Some years ago, never mind how long precisely. ";
    for (int64_t at : {int64_t{0}, size / 3, size / 2, size - (int64_t{1} << 20)})
      REQUIRE(::pwrite(fd, block.data(), block.size(), at) == static_cast<ssize_t>(block.size()));
    ::close(fd);
  }
  const std::string out = dir + "/run";
  const auto r = test::run_cli("train --config " + tiny_text_config(dir) + " --data " + big + " --out " + out);
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("split by document: train 1 ranges (858993460 bytes)") != std::string::npos);
  const auto records = io::Session::open(out).read_metrics();
  double peak = -1;
  for (const auto& rec : records)
    if (rec.value("type", "") == "step") peak = rec.value("peak_rss_mib", -1.0);
  MESSAGE("peak RSS after one step on a 1 GiB corpus: " << peak << " MiB");
  CHECK(peak > 0);
  CHECK(peak < 512);
  // The manifest records the split: the file's byte ranges of each split.
  const auto manifest = nlohmann::json::parse(test::read_file(out + "/manifest.json"));
  const auto& split = manifest["config"]["task"]["split"];
  CHECK(split["test"]["list"][0] == nlohmann::json::array({big, size - 107374182, size}));
  ::unlink(big.c_str());
}
