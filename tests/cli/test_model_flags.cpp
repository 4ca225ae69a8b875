// The model flags (app/cli/flags.h ModelFlags): one option per row of ModelConfig::fields()
// with a flag, made from the row — its help, the row's kind and the table's messages.
#include "app/cli/flags.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using namespace mnemo;
using namespace mnemo::app;

// Parses `args` (without the program name) into fresh ModelFlags on `app`.
void parse(CLI::App& app, ModelFlags& mf, std::vector<std::string> args) {
  mf.add_to(&app);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
}

std::string usage_error(std::vector<std::string> args) {
  CLI::App app;
  ModelFlags mf;
  parse(app, mf, std::move(args));
  try {
    mf.resolve();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("model flags: every model field row with a flag is an option with the row's help") {
  CLI::App app;
  ModelFlags mf;
  mf.add_to(&app);
  int flagged = 0;
  for (const auto& row : ModelConfig::fields().fields()) {
    if (row.flag.empty()) continue;
    CAPTURE(row.name);
    ++flagged;
    const CLI::Option* o = app.get_option_no_throw(row.flag);
    REQUIRE(o != nullptr);
    if (row.name != "segment_len") CHECK(o->get_description().find(row.help) != std::string::npos);
    REQUIRE(mf.field_flag(row.name) != nullptr);
    CHECK(mf.field_flag(row.name)->flag == row.flag);
  }
  CHECK(flagged == 12);  // model slots segment_len dim heads layers dec_layers temperature forgetting cache_len linear
                         // hash_bits
  CHECK(mf.field_flag("ff") == nullptr);  // a row without a flag
}

TEST_CASE("model flags: the values reach the config, read as the rows' kinds") {
  CLI::App app;
  ModelFlags mf;
  parse(app, mf,
        {"--model", "rmt", "--slots", "5", "--segment-len", "16", "--dim", "32", "--heads", "4", "--layers", "1",
         "--dec-layers", "3", "--temperature", "0.5", "--no-forgetting", "--linear", "hashed", "--hash-bits", "8"});
  const ModelConfig c = mf.resolve();
  CHECK(c.model == "rmt");
  CHECK(c.slots == 5);
  CHECK(c.segment_len == 16);
  CHECK(c.dim == 32);
  CHECK(c.heads == 4);
  CHECK(c.layers == 1);
  CHECK(c.dec_layers == 3);
  CHECK(c.temperature == doctest::Approx(0.5));
  CHECK_FALSE(c.forgetting);
  CHECK(c.linear == "hashed");
  CHECK(c.hash_bits == 8);
  CHECK(mf.given() == std::vector<std::string>{"--model", "--slots", "--segment-len", "--dim", "--heads", "--layers",
                                                "--dec-layers", "--temperature", "--no-forgetting", "--linear",
                                                "--hash-bits"});
  // Fields not given keep the config's defaults.
  CLI::App app2;
  ModelFlags none;
  parse(app2, none, {});
  const ModelConfig d = none.resolve();
  CHECK(d.forgetting);
  CHECK(d.model == ModelConfig().model);
  CHECK(none.given().empty());
}

TEST_CASE("model flags: a wrong value is the table's message with the flag in front") {
  CHECK(usage_error({"--slots", "abc"}) == "--slots: config field 'slots' must be an integer, got \"abc\"");
  CHECK(usage_error({"--slots", "2.5"}) == "--slots: config field 'slots' must be an integer, got 2.5");
  CHECK(usage_error({"--slots", "0"}) == "--slots: config field 'slots' = 0 is out of range 1..65536");
  CHECK(usage_error({"--temperature", "hot"}) == "--temperature: config field 'temperature' must be a number, got \"hot\"");
  CHECK(usage_error({"--linear", "sparse"}).rfind("--linear: config field 'linear' = 'sparse' must be", 0) == 0);
  CHECK(usage_error({"--model", "lstm"}).rfind("--model: config field 'model' = 'lstm' must be", 0) == 0);
}
