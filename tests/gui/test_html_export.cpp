// File > Export HTML... (app/gui/model/html_export.h): the command line built for what the app
// shows — a document file and weights, an in-memory document, a random model under its seed, a
// replay's newest checkpoint — and run as a child process: the page is written and holds the
// segments asked for.
#include "app/figures/html_viewer.h"
#include "app/gui/model/html_export.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

using namespace mnemo;
using namespace mnemo::app;

namespace {
std::string joined(const std::vector<std::string>& a) {
  std::string s;
  for (const auto& x : a) s += (s.empty() ? "" : " ") + x;
  return s;
}
}  // namespace

TEST_CASE("html export: the command line of a live view, an in-memory document, a random model and a replay") {
  const std::string dir = test::temp_dir("html-export");
  const std::string doc = dir + "/doc.txt";
  test::write_file(doc, "Call me Ishmael. Some years ago, never mind how long precisely, I went to sea again.\n");
  PublishedView v;
  std::string why;
  CHECK(html_export_args(v, 0, 1, false, dir + "/x.html", dir, &why).empty());
  CHECK(why == "open a document first");
  auto info = std::make_shared<ViewSource>();
  info->doc = std::make_shared<const Document>(load_document(doc));
  info->cfg.model = "rmt";
  info->checkpoint = "/models/w.safetensors";
  info->segment_len = 32;
  info->stepping.segment_len = info->stepping.trained_len = 32;
  v.info = info;
  CHECK(joined(html_export_args(v, 2, 5, false, dir + "/x.html", dir, &why)) ==
        "html --doc " + doc + " --checkpoint /models/w.safetensors --from 2 --to 5 --out " + dir + "/x.html");
  // Stepped at another length than trained: said; --mean-only passed on.
  info->segment_len = info->stepping.segment_len = 16;
  CHECK(joined(html_export_args(v, 0, 1, true, "o.html", dir, &why)) ==
        "html --doc " + doc + " --checkpoint /models/w.safetensors --segment-len 16 --from 0 --to 1 --out o.html --mean-only");
  // A random model: its config, its seed; a document in memory: its bytes.
  info->segment_len = info->stepping.segment_len = 32;
  info->random_weights = true;
  info->checkpoint.clear();
  info->seed = 7;
  info->doc = std::make_shared<const Document>(make_document("bytes \xff in memory"));
  const auto a = html_export_args(v, 0, 0, false, "o.html", dir, &why);
  CHECK(joined(a) == "html --doc " + dir + "/document.txt --config " + dir + "/model.json --random --seed 7 --from 0 --to 0 --out o.html");
  CHECK(test::read_file(dir + "/document.txt") == "bytes \xff in memory");
  CHECK(nlohmann::json::parse(test::read_file(dir + "/model.json"))["model"]["model"] == "rmt");
  // A replay: the session's newest good checkpoint, named by checkpoints/latest.
  v.session_dir = dir + "/run";
  CHECK(html_export_args(v, 0, 0, false, "o.html", dir, &why).empty());
  CHECK(why.find("has no checkpoint yet") != std::string::npos);
  test::run_shell("mkdir -p " + dir + "/run/checkpoints");
  test::write_file(dir + "/run/checkpoints/latest", "step-000000300.safetensors\n");
  CHECK(joined(html_export_args(v, 0, 0, false, "o.html", dir, &why)).find(
            "--checkpoint " + dir + "/run/checkpoints/step-000000300.safetensors --from 0") != std::string::npos);
  test::write_file(dir + "/run/checkpoints/latest", "../../etc/passwd\n");
  CHECK(html_export_args(v, 0, 0, false, "o.html", dir, &why).empty());
}

TEST_CASE("html export: the child process writes the page of the segments asked for") {
  const std::string dir = test::temp_dir("html-export-run");
  const std::string doc = dir + "/doc.txt";
  test::write_file(doc, "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in "
                        "my purse, I thought I would sail about a little and see the watery part of the world.\n");
  PublishedView v;
  auto info = std::make_shared<ViewSource>();
  info->doc = std::make_shared<const Document>(load_document(doc));
  info->cfg.model = "rmt";
  info->cfg.slots = 4;
  info->cfg.segment_len = 16;
  info->cfg.dim = 32;
  info->cfg.heads = 2;
  info->cfg.layers = 1;
  info->random_weights = true;
  info->seed = 3;
  info->segment_len = info->stepping.segment_len = 16;
  v.info = info;
  std::string why;
  const auto args = html_export_args(v, 1, 3, false, dir + "/page.html", dir, &why);
  REQUIRE(!args.empty());
  ChildRun run;
  REQUIRE(run.start(MNEMO_BINARY, args, dir + "/html.log", &why));
  for (int i = 0; i < 1200 && run.poll() == ChildRun::State::kRunning; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  INFO(test::read_file(dir + "/html.log"));
  REQUIRE(run.poll() == ChildRun::State::kExited);
  CHECK(run.exit_code() == 0);
  CHECK(run.last_line().find("it is the whole viewer") != std::string::npos);
  const std::string page = test::read_file(dir + "/page.html");
  const std::string open = "<script id=\"mnemo-data\" type=\"application/octet-stream\">";
  const size_t at = page.find(open);
  REQUIRE(at != std::string::npos);
  const std::string raw = zlib_inflate(base64_decode(page.substr(at + open.size(), page.find("</script>", at) - at - open.size())));
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
  const auto meta = nlohmann::json::parse(raw.substr(4, n));
  CHECK(meta["model"] == "rmt");
  CHECK(meta["from"] == 1);
  CHECK(meta["to"] == 3);
  CHECK(meta["model_note"] == "randomly initialised (seed 3)");
  // A program that cannot start: the child exits 127.
  ChildRun bad;
  REQUIRE(bad.start(dir + "/no-such-program", {}, dir + "/bad.log", &why));
  for (int i = 0; i < 100 && bad.poll() == ChildRun::State::kRunning; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(bad.exit_code() == 127);
}
