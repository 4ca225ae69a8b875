// The shipped model zoo (assets/models/, docs/zoo/): every model loads by its card's command
// and a fast evaluation on a fixed slice of the test split reproduces the card's number
// within the card's tolerance, and with the memory zeroed stays on the right side of the
// card's bound. A broken model file, loader or task fails here.
//
// Each card has one machine-readable block (docs/zoo/README.md "The CI check"):
//   ```json zoo-check
//   {"args": "eval --checkpoint assets/models/NAME.safetensors --split test --batches 4 --set train.batch=32",
//    "metric": "accuracy", "expect": 0.998, "tolerance": 0.01, "zero_memory_max": 0.2, "data": ""}
//   ```
// metric is a field of `eval --json`; zero_memory_max / zero_memory_min bound the same
// metric with --zero-memory; memory_gain_reset_min / _max bound eval --by-position's memory_gain_reset
// (bits per token the memory saves against the memory reset at every segment; a max states that a
// memory is worth no more than that); data names a data set the task reads (mnist, moby-dick, sotu, general):
// when it is not in the cache the check is skipped (bash .ci/fetch-data NAME).
#include "core/data/dataset_cache.h"
#include "core/train/zoo.h"
#include "tests/support/skip.h"
#include "tests/support/cli_here.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace mnemo;

namespace {

const std::string kRoot = MNEMO_SOURCE_DIR;

// The zoo-check block of a card, or null.
nlohmann::json card_check(const std::string& card) {
  std::ifstream in(card);
  if (!in) return nullptr;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::string open = "```json zoo-check\n";
  const auto a = text.find(open);
  if (a == std::string::npos) return nullptr;
  const auto b = text.find("```", a + open.size());
  if (b == std::string::npos) return nullptr;
  return nlohmann::json::parse(text.substr(a + open.size(), b - a - open.size()));
}

bool data_cached(const std::string& name) {
  try {
    dataset_package_dir(name);
    return true;
  } catch (const DatasetError&) {
    return false;
  }
}

// The card's command, run in this process (test::run_cli_here: the program's own command table,
// without the ~0.9 CPU s of a process start per model; tests/core/test_trainer.cpp starts `eval`).
nlohmann::json eval_json(const std::string& args) {
  auto r = test::run_cli_here("--threads 1 " + args + " --json");
  INFO(args);
  INFO(r.output);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.output.substr(r.output.find('{')));
}

void check_zoo_model(const std::string& name) {
  const std::string model = kRoot + "/assets/models/" + name + ".safetensors";
  const std::string card = kRoot + "/docs/zoo/" + name + ".md";
  REQUIRE_MESSAGE(test::path_exists(model), "the zoo model " << model << " is missing");
  REQUIRE_MESSAGE(test::path_exists(card), "the card " << card << " is missing");
  // The file is a zoo model whose metadata names this card.
  auto meta = read_safetensors_metadata(model);
  CHECK(meta["format"] == kZooFormat);
  CHECK(meta["name"] == name);
  CHECK(meta["card"] == "docs/zoo/" + name + ".md");
  CHECK_FALSE(meta["summary"].empty());
  nlohmann::json check = card_check(card);
  REQUIRE_MESSAGE(check.is_object(), card << " has no ```json zoo-check block");
  const std::string data = check.value("data", std::string());
  if (!data.empty() && !data_cached(data)) MNEMO_SKIP("no " + data + " in the cache (bash .ci/fetch-data " + data + ")");
  std::string args = check.at("args").get<std::string>();
  // The card's command names the file relative to the repository root.
  const std::string rel = "assets/models/" + name + ".safetensors";
  const auto at = args.find(rel);
  REQUIRE_MESSAGE(at != std::string::npos, "the card's command must evaluate " << rel);
  args.replace(at, rel.size(), model);
  const std::string metric = check.at("metric").get<std::string>();
  const double expect = check.at("expect").get<double>(), tol = check.at("tolerance").get<double>();
  // Text models (a reset gain in the card): one `eval --by-position` gives the bits with the
  // memory, reset and zeroed in one run; that its bits with the memory and zeroed equal those of
  // a plain `eval` and of `eval --zero-memory` is tested on a small model
  // (tests/core/test_trainer.cpp), so the two plain runs are not repeated here.
  const bool by_position = check.contains("memory_gain_reset_min") || check.contains("memory_gain_reset_max");
  if (by_position) REQUIRE(metric == "bits_per_token");
  auto with = eval_json(by_position ? args + " --by-position" : args);
  CAPTURE(with.dump());
  REQUIRE(with.contains(metric));
  CHECK(std::abs(with[metric].get<double>() - expect) <= tol);
  if (check.contains("zero_memory_max") || check.contains("zero_memory_min")) {
    double zeroed = 0.0;
    if (by_position) {
      zeroed = with["bits_per_token_zero_memory"].get<double>();
    } else {
      auto without = eval_json(args + " --zero-memory");
      CAPTURE(without.dump());
      CHECK(without["zero_memory"] == true);
      zeroed = without[metric].get<double>();
    }
    if (check.contains("zero_memory_max")) CHECK(zeroed <= check["zero_memory_max"].get<double>());
    if (check.contains("zero_memory_min")) CHECK(zeroed >= check["zero_memory_min"].get<double>());
  }
  // Text models: the memory reset to the initial memory at every segment costs at least (or,
  // for a card that says the memory is worth nothing, at most) this many bits per token ...
  if (by_position) {
    const double gain = with["memory_gain_reset"].get<double>();
    const double gain_from = with["memory_gain_reset_from_position"].get<double>();
    if (check.contains("memory_gain_reset_min")) CHECK(gain >= check["memory_gain_reset_min"].get<double>());
    if (check.contains("memory_gain_reset_max")) CHECK(gain <= check["memory_gain_reset_max"].get<double>());
    // ... and from position 8 of each segment on, where a bridge over the boundary no longer helps.
    if (check.contains("memory_gain_reset_from_position_min"))
      CHECK(gain_from >= check["memory_gain_reset_from_position_min"].get<double>());
    if (check.contains("memory_gain_reset_from_position_max"))
      CHECK(gain_from <= check["memory_gain_reset_from_position_max"].get<double>());
  }
}

}  // namespace

TEST_CASE("zoo: every model in assets/models has a card with a check, and the zoo fits its budget") {
  const auto entries = list_zoo(kRoot + "/assets/models");
  int64_t total = 0;
  for (const auto& e : entries) {
    CAPTURE(e.name);
    CHECK(e.bytes <= kZooMaxBytes);
    total += e.bytes;
    CHECK(card_check(kRoot + "/" + e.card).is_object());
  }
  CHECK(total <= 40 * 1024 * 1024);
}

// The shipped models, one test each (a missing or broken model fails its own test); the
// list must name every model in assets/models.
const char* const kZooModels[] = {"memformer-copy",        "memformer-copy-unit", "memformer-general",      "memformer-mnist",
                                  "memformer-text",        "memformer-text-names",  "memformer-text-recall", "rmt-general",
                                  "memformer-two-facts",   "memformer-two-facts-ft", "memoryformer-lm",
                                  "mtn-qa",                "rmt-copy",            "rmt-text",               "rmt-text-hashed",
                                  "trxl-copy",             "trxl-text",           "trxl-text-recall"};

TEST_CASE("zoo: the tests below cover every shipped model") {
  std::vector<std::string> names;
  for (const auto& e : list_zoo(kRoot + "/assets/models")) names.push_back(e.name);
  std::vector<std::string> tested(std::begin(kZooModels), std::end(kZooModels));
  std::sort(tested.begin(), tested.end());
  CHECK(names == tested);
}

TEST_CASE("zoo model memformer-copy: the card's accuracy, and chance with the memory zeroed") {
  check_zoo_model("memformer-copy");
}
TEST_CASE("zoo model memformer-copy-unit: the card's accuracy, and chance with the memory zeroed") {
  check_zoo_model("memformer-copy-unit");
}
TEST_CASE("zoo model memformer-two-facts: the card's accuracy, and chance with the memory zeroed") {
  check_zoo_model("memformer-two-facts");
}
TEST_CASE("zoo model memformer-two-facts-ft: the card's accuracy, and chance with the memory zeroed") {
  check_zoo_model("memformer-two-facts-ft");
}
TEST_CASE("zoo model memformer-text: the card's bits per byte on held-out addresses, and a memory worth no more than the "
          "card says") {
  check_zoo_model("memformer-text");
}
TEST_CASE("zoo model memformer-text-recall: the card's bits per byte on held-out addresses, and what its slots save beyond "
          "position 8") {
  check_zoo_model("memformer-text-recall");
}
TEST_CASE("zoo model memformer-text-names: the card's bits per byte on held-out addresses, and what its slots save "
          "beyond position 8") {
  check_zoo_model("memformer-text-names");
}
TEST_CASE("zoo model memformer-general: the card's bits per byte on held-out general text, and what its slots save "
          "against a reset") {
  check_zoo_model("memformer-general");
}
TEST_CASE("zoo model rmt-general: the card's bits per byte on held-out general text, and what its memory saves") {
  check_zoo_model("rmt-general");
}
TEST_CASE("zoo model mtn-qa: the card's choice accuracy, and chance with the memory zeroed") { check_zoo_model("mtn-qa"); }
TEST_CASE("zoo model rmt-copy: the card's accuracy, and chance with the memory zeroed") { check_zoo_model("rmt-copy"); }
TEST_CASE("zoo model rmt-text: the card's bits per byte on held-out addresses, and what the memory saves") {
  check_zoo_model("rmt-text");
}
TEST_CASE("zoo model rmt-text-hashed: the card's bits per byte on held-out addresses, and worse with the memory zeroed") {
  check_zoo_model("rmt-text-hashed");
}
TEST_CASE("zoo model trxl-text: the card's bits per byte on held-out addresses, and what its cache saves") {
  check_zoo_model("trxl-text");
}
TEST_CASE("zoo model trxl-text-recall: the card's bits per byte on held-out addresses, and what its cache saves beyond position 8") {
  check_zoo_model("trxl-text-recall");
}
TEST_CASE("zoo model trxl-copy: the card's accuracy, and chance with the memory zeroed") { check_zoo_model("trxl-copy"); }
TEST_CASE("zoo model memformer-mnist: the card's bits per pixel, and worse with the memory zeroed") {
  check_zoo_model("memformer-mnist");
}
TEST_CASE("zoo model memoryformer-lm: the card's bits per byte") { check_zoo_model("memoryformer-lm"); }
