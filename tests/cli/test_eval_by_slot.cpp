// `eval --doc --by-slot` and `eval --doc --patch-from` (docs/training.md#eval-by-slot): the
// all-entries ablation prints eval's reset and zeroed figures exactly, the entries' totals are
// their segments' sums, the ranking is sorted, every family of model with memory runs, and bad
// input exits 2 naming the flag. The numbers themselves are checked against an independent
// computation in python/tests/test_models.py and tests/core/test_memory_entries.cpp.
// The commands run in this process (test::run_cli_here: the program's own app::run_cli, ~30
// command lines without a process start-up each); the text forms start the binary (run_cli).
#include "tests/support/cli_here.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using mnemo::test::run_cli;
using mnemo::test::run_cli_here;

namespace {

nlohmann::json last_json_line(const std::string& out) {
  const size_t end = out.find_last_not_of('\n');
  const size_t begin = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(begin == std::string::npos ? 0 : begin + 1, end + 1));
}

// A random model of `kind` exported to dir/<kind>.safetensors.
std::string export_model(const std::string& dir, const std::string& kind, const std::string& extra = "") {
  const std::string cfg = dir + "/" + kind + ".json";
  std::ofstream(cfg) << R"({"model": {"model": ")" << kind
                     << R"(", "slots": 3, "segment_len": 8, "dim": 16, "heads": 2, "layers": 1, "dec_layers": 1, "ff": 32,
                        "n1_layers": 1, "n2_layers": 1)" << extra << "}}";
  const std::string w = dir + "/" + kind + ".safetensors";
  const auto r = run_cli_here("export-weights --config " + cfg + " --seed 3 --out " + w);
  INFO(r.output);
  REQUIRE(r.code == 0);
  return w;
}

}  // namespace

TEST_CASE("cli: eval --doc --by-slot - every entry removed prints eval's reset and zeroed figures exactly, entry totals "
          "are their segments' sums, ranked, for every family with memory") {
  const std::string dir = mnemo::test::temp_dir("eval-by-slot");
  const std::string doc = dir + "/doc.txt";
  std::ofstream(doc) << "Call me Ishmael. Some years ago - never mind how long precisely - having little money.";
  for (const std::string kind : {"memformer", "rmt", "rmt-write-only", "trxl", "trxl-rmt", "mtn", "mtn-naive"}) {
    CAPTURE(kind);
    const std::string w = export_model(dir, kind, kind == "trxl" ? R"(, "slots": 20)" : "");
    const auto r = run_cli_here("--threads 1 eval --checkpoint " + w + " --doc " + doc + " --by-slot --json");
    INFO(r.output);
    REQUIRE(r.code == 0);
    const auto j = last_json_line(r.output);
    CHECK(j["ablate_all_reset"].get<double>() == j["bits_per_byte_reset_memory"].get<double>());
    CHECK(j["ablate_all_zeroed"].get<double>() == j["bits_per_byte_zero_memory"].get<double>());
    const int64_t n = j["entry_count"];
    CHECK(n == (kind == "trxl" ? 3 : kind == "trxl-rmt" ? 3 + 1 : 3));
    REQUIRE(j["entries"].size() == static_cast<size_t>(n));
    REQUIRE(j["segments_by_slot"].size() == 11);  // 86 bytes in segments of 8
    CHECK_FALSE(j["segments_by_slot"][0]["entries_removed"].get<bool>());
    for (const std::string a : {"reset", "zeroed"}) {
      CAPTURE(a);
      double all = 0, sum = 0;
      for (int64_t e = 0; e < n; ++e) {
        double s = 0;
        for (const auto& seg : j["segments_by_slot"]) s += seg["bits_saved_" + a][static_cast<size_t>(e)].get<double>();
        CHECK(j["entries"][static_cast<size_t>(e)]["bits_saved_" + a].get<double>() == doctest::Approx(s).epsilon(1e-9));
        sum += s;
      }
      for (const auto& seg : j["segments_by_slot"]) all += seg["all_entries_bits_saved_" + a].get<double>();
      CHECK(j["sum_of_entries_bits_saved_" + a].get<double>() == doctest::Approx(sum).epsilon(1e-9));
      CHECK(j["all_entries_bits_saved_" + a].get<double>() == doctest::Approx(all).epsilon(1e-9));
      // Every entry removed: the reset (zeroed) score's gap over the carried one, in bits.
      const double predicted = j["predicted"];
      const double gap = a == "reset" ? j["memory_gain_reset"].get<double>() : j["memory_gain"].get<double>();
      CHECK(all == doctest::Approx(gap * predicted).epsilon(1e-5));
      const auto& rank = j["ranking_" + a];
      REQUIRE(rank.size() == static_cast<size_t>(n));
      for (size_t k = 1; k < rank.size(); ++k)
        CHECK(j["entries"][rank[k - 1].get<size_t>()]["bits_saved_" + a].get<double>() >=
              j["entries"][rank[k].get<size_t>()]["bits_saved_" + a].get<double>());
    }
  }
  // The text form: the ranking, the sum and the all-entries figure side by side, said not to add up.
  const std::string w = dir + "/memformer.safetensors";  // exported above
  const auto t = run_cli("--threads 1 eval --checkpoint " + w + " --doc " + doc + " --by-slot");
  INFO(t.output);
  CHECK(t.code == 0);
  CHECK(t.output.find("sum of the single entries") != std::string::npos);
  CHECK(t.output.find("every entry at once") != std::string::npos);
  CHECK(t.output.find("need not add up") != std::string::npos);
  CHECK(t.output.find("slot 2") != std::string::npos);
}

TEST_CASE("cli: eval --by-slot and --patch-from refuse bad input with exit 2 naming the flag") {
  const std::string dir = mnemo::test::temp_dir("eval-by-slot-bad");
  const std::string doc = dir + "/doc.txt";
  std::ofstream(doc) << "Call me Ishmael. Some years ago - never mind how long precisely - having little money.";
  const std::string w = export_model(dir, "rmt");
  const std::string none = export_model(dir, "transformer");
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"eval --checkpoint " + w + " --by-slot", "--by-slot"},
           {"eval --checkpoint " + none + " --doc " + doc + " --by-slot", "has no memory"},
           {"eval --checkpoint " + w + " --doc " + doc + " --patch-from " + doc + " --at 1", "FILE:SEGMENT"},
           {"eval --checkpoint " + w + " --doc " + doc + " --patch-from " + doc + ":x --at 1", "FILE:SEGMENT"},
           {"eval --checkpoint " + w + " --doc " + doc + " --patch-from " + doc + ":1", "--at"},
           {"eval --checkpoint " + w + " --doc " + doc + " --at 1", "--patch-from"},
           {"eval --checkpoint " + w + " --doc " + doc + " --patch-from " + doc + ":11 --at 1", "out of range 0..10"},
           {"eval --checkpoint " + w + " --doc " + doc + " --patch-from " + doc + ":1 --at 11", "--at 11 is out of range"},
           {"eval --checkpoint " + w + " --doc " + doc + " --patch-from " + dir + "/missing.txt:1 --at 1", "missing.txt"},
           {"eval --checkpoint " + w + " --doc " + doc + " --patch-from " + doc + ":1 --at 1 --by-slot", "--by-slot"},
           {"eval --checkpoint " + none + " --doc " + doc + " --patch-from " + doc + ":1 --at 1", "has no memory"}}) {
    CAPTURE(c.args);
    const auto r = run_cli_here("--threads 1 " + c.args);
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find(c.says) != std::string::npos);
  }
  // A good patch: the text form names both documents' segments.
  const auto r = run_cli("--threads 1 eval --checkpoint " + w + " --doc " + doc + " --patch-from " + doc + ":3 --at 2");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("with the memory after segment 3 of") != std::string::npos);
}

TEST_CASE("cli: step --by-slot writes each segment's entries x tokens effects - their sums are eval --by-slot's for that "
          "segment - and refuses a model without memory") {
  const std::string dir = mnemo::test::temp_dir("step-by-slot");
  const std::string doc = dir + "/doc.txt";
  std::ofstream(doc) << "Call me Ishmael. Some years ago - never mind how long precisely - having little money.";
  const std::string w = export_model(dir, "memformer");
  auto r = run_cli_here("--threads 1 step --checkpoint " + w + " --doc " + doc + " --out " + dir +
                        "/out --from 0 --to 3 --by-slot --format png,csv");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("most helpful slot: slot ") != std::string::npos);
  const auto e = run_cli_here("--threads 1 eval --checkpoint " + w + " --doc " + doc + " --by-slot --json");
  REQUIRE(e.code == 0);
  const auto j = last_json_line(e.output);
  for (int seg = 0; seg <= 3; ++seg) {
    CAPTURE(seg);
    const std::string base = dir + "/out/step-000" + std::to_string(seg) + "/slot_effects";
    CHECK(mnemo::test::path_exists(base + ".png"));
    std::ifstream in(base + ".csv");
    REQUIRE(in.good());
    std::string line;
    std::getline(in, line);
    CHECK(line == "entry,label,token,byte,nats_carried,nats_reset,bits_saved_reset,nats_zeroed,bits_saved_zeroed");
    std::vector<double> reset(3, 0.0), zeroed(3, 0.0);
    int rows = 0;
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
      REQUIRE(f.size() == 9);
      const int entry = std::stoi(f[0]);
      CHECK(f[1] == "slot " + f[0]);
      reset.at(static_cast<size_t>(entry)) += std::stod(f[6]);
      zeroed.at(static_cast<size_t>(entry)) += std::stod(f[8]);
      ++rows;
    }
    CHECK(rows == 3 * 8);  // 3 slots x the 8 tokens of the next segment (Memformer predicts it)
    const auto& s = j["segments_by_slot"][static_cast<size_t>(seg)];
    for (size_t k = 0; k < 3; ++k) {
      CHECK(reset[k] == doctest::Approx(s["bits_saved_reset"][k].get<double>()).epsilon(1e-5).scale(1e-5));
      CHECK(zeroed[k] == doctest::Approx(s["bits_saved_zeroed"][k].get<double>()).epsilon(1e-5).scale(1e-5));
    }
  }
  const std::string none = export_model(dir, "transformer");
  r = run_cli_here("--threads 1 step --checkpoint " + none + " --doc " + doc + " --out " + dir + "/none --by-slot");
  CHECK(r.code == 2);
  CHECK(r.output.find("has no memory") != std::string::npos);
  CHECK_FALSE(mnemo::test::path_exists(dir + "/none/manifest.json"));
}
