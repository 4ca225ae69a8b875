// Config field tables (core/io/config_fields.h) and the configs declared with them: model
// (core/models/config.h), train and curriculum (core/train/train_config.h), the synthetic
// tasks (core/data/tasks.h) and the QA task's options (core/data/qa_options.h). Reading,
// the one message format per fault with the field's dotted path on the error, writing back
// byte for byte (the zoo's recorded configs too), and --set.
#include "core/data/qa_task.h"
#include "core/data/tasks.h"
#include "core/io/config_fields.h"
#include "core/io/json_file.h"
#include "core/models/config.h"
#include "core/models/factory.h"
#include "core/train/checkpoint.h"
#include "core/train/train_config.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <utility>

using namespace mnemo;

namespace {

// A config with one field of each kind, to test the table itself.
struct FieldsDemo {
  int64_t count = 3;
  double ratio = 0.5;
  bool on = true;
  std::string mode = "a";
  uint64_t seed = 7;
  double scale = 1.0;  // written only when not 1

  static const ConfigFields<FieldsDemo>& fields() {
    using D = FieldsDemo;
    static const ConfigFields<FieldsDemo> table(
        "demo.", {int_field("count", &D::count, 1, 9, "how many", "--count"),
                  real_field("ratio", &D::ratio, {0.0, 1.0, true, false}, "a share"),
                  bool_field("on", &D::on, "a switch"),
                  string_field("mode", &D::mode, {"a", "b", "c"}, "which one"),
                  seed_field("seed", &D::seed, "a seed"),
                  real_field("scale", &D::scale, {0.0, std::numeric_limits<double>::infinity(), true, true}, "> 0")
                      .when([](const FieldsDemo& d) { return d.scale != 1.0; })});
    return table;
  }
};

// The message and field() of the ConfigError `f` throws.
std::pair<std::string, std::string> config_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return {e.what(), e.field()};
  }
  FAIL("no ConfigError was thrown");
  return {};
}

FieldsDemo read_demo(const char* json, const ReadOptions& opt = {}) {
  FieldsDemo d;
  FieldsDemo::fields().read(d, nlohmann::json::parse(json), opt);
  FieldsDemo::fields().validate(d);
  return d;
}

using Refusal = std::pair<std::string, std::string>;

// A training config small enough to build its task in no time.
nlohmann::json tiny_training_json() {
  return nlohmann::json::parse(R"({
    "model": {"model": "rmt", "slots": 2, "segment_len": 8, "dim": 16, "heads": 2, "layers": 1},
    "task": {"name": "copy", "source_len": 4, "symbols": 4, "segments": 2},
    "train": {"steps": 2, "batch": 2}
  })");
}

}  // namespace

TEST_CASE("config fields: a table reads - checks and writes each kind with one message per fault naming the field") {
  const FieldsDemo d = read_demo(R"({"count": 5, "ratio": 1, "on": false, "mode": "c", "seed": 18446744073709551615})");
  CHECK(d.count == 5);
  CHECK(d.ratio == 1.0);  // an integer is a number
  CHECK_FALSE(d.on);
  CHECK(d.mode == "c");
  CHECK(d.seed == std::numeric_limits<uint64_t>::max());
  CHECK(d.scale == 1.0);  // untouched: the member's default

  // Reading: unknown keys and wrong kinds.
  CHECK(config_error_of([] { read_demo(R"({"colour": 1})"); }) ==
        Refusal{"config field 'demo.colour' is unknown; known fields: count, ratio, on, mode, seed, scale", "demo.colour"});
  CHECK(config_error_of([] { read_demo(R"({"name": "x", "colour": 1})", {{"name"}, " for task 'x'"}); }) ==
        Refusal{"config field 'demo.colour' is unknown for task 'x'; known fields: name, count, ratio, on, mode, seed, scale",
              "demo.colour"});
  CHECK(config_error_of([] { read_demo(R"({"count": 1.5})"); }) ==
        Refusal{"config field 'demo.count' must be an integer, got 1.5", "demo.count"});
  CHECK(config_error_of([] { read_demo(R"({"count": 18446744073709551615})"); }) ==
        Refusal{"config field 'demo.count' = 18446744073709551615 is out of range 1..9", "demo.count"});
  CHECK(config_error_of([] { read_demo(R"({"seed": -1})"); }) ==
        Refusal{"config field 'demo.seed' must be a non-negative integer, got -1", "demo.seed"});
  CHECK(config_error_of([] { read_demo(R"({"ratio": "x"})"); }) ==
        Refusal{"config field 'demo.ratio' must be a number, got \"x\"", "demo.ratio"});
  CHECK(config_error_of([] { read_demo(R"({"on": 1})"); }) ==
        Refusal{"config field 'demo.on' must be true or false, got 1", "demo.on"});
  CHECK(config_error_of([] { read_demo(R"({"mode": 3})"); }) ==
        Refusal{"config field 'demo.mode' must be a string, got 3", "demo.mode"});

  // Checking: integer ranges, real intervals (open or closed ends, inf unbounded), choices.
  CHECK(config_error_of([] { read_demo(R"({"count": 0})"); }) ==
        Refusal{"config field 'demo.count' = 0 is out of range 1..9", "demo.count"});
  CHECK(config_error_of([] { read_demo(R"({"ratio": 0})"); }) ==
        Refusal{"config field 'demo.ratio' = 0 is out of range (0, 1]", "demo.ratio"});
  CHECK(config_error_of([] { read_demo(R"({"ratio": 1.25})"); }) ==
        Refusal{"config field 'demo.ratio' = 1.25 is out of range (0, 1]", "demo.ratio"});
  CHECK(config_error_of([] { read_demo(R"({"scale": -2})"); }) ==
        Refusal{"config field 'demo.scale' = -2 is out of range (0, inf)", "demo.scale"});
  CHECK(config_error_of([] { read_demo(R"({"mode": "d"})"); }) ==
        Refusal{"config field 'demo.mode' = 'd' must be \"a\", \"b\" or \"c\"", "demo.mode"});
  FieldsDemo nan;
  nan.ratio = std::numeric_limits<double>::quiet_NaN();
  CHECK(config_error_of([&] { FieldsDemo::fields().validate(nan); }) ==
        Refusal{"config field 'demo.ratio' = NaN is out of range (0, 1]", "demo.ratio"});

  // Writing: every field, but a `when` row only where it says so; what is written reads back.
  CHECK(FieldsDemo::fields().to_json(FieldsDemo{}).dump() == R"({"count":3,"mode":"a","on":true,"ratio":0.5,"seed":7})");
  FieldsDemo scaled;
  scaled.scale = 2.5;
  const nlohmann::json j = FieldsDemo::fields().to_json(scaled);
  CHECK(j["scale"] == 2.5);
  FieldsDemo back;
  FieldsDemo::fields().read(back, j);
  CHECK(FieldsDemo::fields().to_json(back) == j);

  // The flag column and the row lookup.
  REQUIRE(FieldsDemo::fields().find("count") != nullptr);
  CHECK(FieldsDemo::fields().find("count")->flag == "--count");
  CHECK(FieldsDemo::fields().find("colour") == nullptr);
}

TEST_CASE("config fields: --set text is read as the field's kind") {
  const auto& t = FieldsDemo::fields();
  CHECK(ConfigFields<FieldsDemo>::set_value(t.find("mode"), "b") == "b");
  CHECK(ConfigFields<FieldsDemo>::set_value(t.find("mode"), "\"b\"") == "b");
  CHECK(ConfigFields<FieldsDemo>::set_value(t.find("mode"), "true") == "true");  // a string field takes the text
  CHECK(ConfigFields<FieldsDemo>::set_value(t.find("count"), "5") == 5);
  CHECK(ConfigFields<FieldsDemo>::set_value(t.find("on"), "false") == false);
  // Not JSON: the text, which reading then refuses by name.
  const nlohmann::json five = ConfigFields<FieldsDemo>::set_value(t.find("count"), "five");
  CHECK(five == "five");
  CHECK(config_error_of([&] {
          FieldsDemo d;
          t.read(d, {{"count", five}});
        }) == Refusal{"config field 'demo.count' must be an integer, got \"five\"", "demo.count"});

  // On a training config: model, train and curriculum fields by their kind; the task's and
  // anything else as JSON, else as a string.
  nlohmann::json j = tiny_training_json();
  apply_config_set(j, "model.model", "trxl");
  apply_config_set(j, "model.linear", "\"hashed\"");
  apply_config_set(j, "model.slots", "3");
  apply_config_set(j, "train.schedule", "linear");
  apply_config_set(j, "train.lr", "0.003");
  apply_config_set(j, "train.curriculum.rule", "every");
  apply_config_set(j, "train.curriculum.every", "5");
  apply_config_set(j, "task.segments", "3");
  apply_config_set(j, "description", "a run");
  CHECK(j["model"]["model"] == "trxl");
  CHECK(j["model"]["linear"] == "hashed");
  CHECK(j["model"]["slots"] == 3);
  CHECK(j["train"]["schedule"] == "linear");
  CHECK(j["train"]["lr"] == 0.003);
  CHECK(j["train"]["curriculum"] == nlohmann::json{{"rule", "every"}, {"every", 5}});
  CHECK(j["task"]["segments"] == 3);
  CHECK(j["description"] == "a run");
  const auto [what, field] = config_error_of([&] { apply_config_set(j, "model.slots.x", "1"); });
  CHECK(field == "model.slots.x");
  CHECK(what.rfind("config field 'model.slots.x' cannot be set: ", 0) == 0);
}

TEST_CASE("config fields: every config refuses an unknown field listing the known ones") {
  CHECK(config_error_of([] { ModelConfig::from_json({{"slotz", 3}}); }) ==
        Refusal{"config field 'slotz' is unknown; known fields: model, slots, segment_len, dim, heads, layers, dec_layers, "
              "ff, n_cls, temperature, forgetting, memory, memory_scale, memory_gate, cache_len, n1_layers, n2_layers, linear, "
              "hash_bits, hash_temperature",
              "slotz"});
  CHECK(config_error_of([] { TrainConfig::from_json({{"momentum", 0.9}}); }) ==
        Refusal{"config field 'train.momentum' is unknown; known fields: steps, batch, lr, warmup, schedule, min_lr_ratio, "
              "weight_decay, clip, bptt_depth, strategy, eval_every, eval_batches, save_every, save_at_eval, "
              "save_every_seconds, record_every, record_segments, record_example, eval_zero_memory, curriculum, seed",
              "train.momentum"});
  CHECK(config_error_of([] { CurriculumConfig::from_json({{"start", 2}, {"speed", 3}}); }) ==
        Refusal{"config field 'train.curriculum.speed' is unknown; known fields: start, max, rule, threshold, min_steps, every",
              "train.curriculum.speed"});
  CHECK(config_error_of([] { make_task({{"name", "copy"}, {"colour", 1}}); }) ==
        Refusal{"config field 'task.colour' is unknown for task 'copy'; known fields: name, source_len, symbols, pairs, "
              "segments, step_width, train_size, valid_size, test_size, seed",
              "task.colour"});
  CHECK(config_error_of([] { make_task({{"name", "qa"}, {"colour", 1}}); }) ==
        Refusal{"config field 'task.colour' is unknown for task 'qa'; known fields: name, segments, seed, chunk_len, "
              "doc_chunks, facts, candidates, fact_chunks, byte_label_warmup, train_size, valid_size, test_size",
              "task.colour"});
  CHECK(config_error_of([] { make_task({{"name", "copy-recall"}, {"pairs", 2}}); }) ==
        Refusal{"config field 'task.pairs' is unknown for task 'copy-recall'; known fields: name, segments, source_len, "
              "facts, symbols, train_size, valid_size, test_size, seed",
              "task.pairs"});
}

TEST_CASE("config fields: a bad value inside a training config names its dotted path on the error") {
  auto refused = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = tiny_training_json();
    edit(j);
    return config_error_of([&] { TrainingConfig::from_json(j); });
  };
  CHECK(refused([](auto& j) { j["model"]["slots"] = 0; }) ==
        Refusal{"config field 'model.slots' = 0 is out of range 1..65536", "model.slots"});
  CHECK(refused([](auto& j) { j["model"]["temperature"] = 0; }) ==
        Refusal{"config field 'model.temperature' = 0 is out of range (0, 100]", "model.temperature"});
  CHECK(refused([](auto& j) { j["model"]["dim"] = 15; }) ==
        Refusal{"config field 'model.dim' = 15 must be divisible by 'heads' = 2", "model.dim"});
  CHECK(refused([](auto& j) { j["model"]["memory_scale"] = "big"; }) ==
        Refusal{"config field 'model.memory_scale' = 'big' must be \"unit\" or \"sqrt_dim\"", "model.memory_scale"});
  CHECK(refused([](auto& j) { j["train"]["lr"] = 0; }) ==
        Refusal{"config field 'train.lr' = 0 is out of range (0, 10]", "train.lr"});
  CHECK(refused([](auto& j) { j["train"]["schedule"] = "step"; }) ==
        Refusal{"config field 'train.schedule' = 'step' must be \"constant\", \"linear\" or \"cosine\"", "train.schedule"});
  CHECK(refused([](auto& j) { j["train"]["seed"] = -3; }) ==
        Refusal{"config field 'train.seed' must be a non-negative integer, got -3", "train.seed"});
  CHECK(refused([](auto& j) { j["train"]["eval_batches"] = 0; }) ==
        Refusal{"config field 'train.eval_batches' = 0; use >= 1, or -1 for the whole split", "train.eval_batches"});
  CHECK(refused([](auto& j) { j["train"]["curriculum"] = {{"start", 2}, {"max", 3}, {"threshold", 1.5}}; }) ==
        Refusal{"config field 'train.curriculum.threshold' = 1.5 is out of range [0, 1]", "train.curriculum.threshold"});
  CHECK(refused([](auto& j) { j["train"]["curriculum"] = {{"start", 5000}}; }) ==
        Refusal{"config field 'train.curriculum.start' = 5000 is out of range 0..4096", "train.curriculum.start"});
  CHECK(refused([](auto& j) { j["task"]["source_len"] = 0; }) ==
        Refusal{"config field 'task.source_len' = 0 is out of range 1..4096", "task.source_len"});
  CHECK(refused([](auto& j) { j["task"] = {{"name", "qa"}, {"facts", 0}}; }) ==
        Refusal{"config field 'task.facts' = 0 is out of range 1..25", "task.facts"});
  CHECK(refused([](auto& j) { j["task"] = {{"name", "copy-recall"}, {"segments", 2}}; }) ==
        Refusal{"config field 'task.segments' = 2 is out of range 3..4096", "task.segments"});
  CHECK(refused([](auto& j) { j["model"]["segment_len"] = 4; }).second == "model.segment_len");
  // A file names itself in front and keeps the field.
  const std::string dir = test::temp_dir("config-fields");
  nlohmann::json bad = tiny_training_json();
  bad["train"]["batch"] = 0;
  test::write_file(dir + "/bad.json", bad.dump());
  CHECK(config_error_of([&] { TrainingConfig::load(dir + "/bad.json"); }) ==
        Refusal{"config file '" + dir + "/bad.json': config field 'train.batch' = 0 is out of range 1..1048576", "train.batch"});
}

TEST_CASE("config fields: every config round-trips through to_json and from_json") {
  // The model config as sessions and checkpoints record it (keys sorted, reals as reals).
  CHECK(ModelConfig{}.to_json().dump() ==
        R"({"cache_len":-1,"dec_layers":2,"dim":64,"ff":0,"forgetting":true,"hash_bits":8,"hash_temperature":1.0,)"
        R"("heads":4,"layers":2,"linear":"dense","memory":true,"memory_gate":false,"memory_scale":"unit","model":"memformer",)"
        R"("n1_layers":2,)"
        R"("n2_layers":4,"n_cls":1,"segment_len":32,"slots":16,"temperature":0.25})");
  ModelConfig m;
  m.model = "mtn";
  m.slots = 5;
  m.temperature = 0.5;
  m.forgetting = false;
  m.memory_scale = "sqrt_dim";
  m.linear = "hashed";
  m.hash_bits = 4;
  m.hash_temperature = 2.0;
  m.cache_len = 3;
  const ModelConfig m2 = ModelConfig::from_json(m.to_json());
  CHECK(m2.to_json().dump() == m.to_json().dump());
  CHECK(m2.model == "mtn");
  CHECK(m2.memory_scale == "sqrt_dim");
  CHECK_FALSE(m2.forgetting);
  CHECK(m2.hash_temperature == 2.0);

  TrainConfig t;
  t.schedule = "linear";
  t.lr = 0.003;
  t.seed = 9;
  CHECK(t.to_json().count("curriculum") == 0);  // off: not written
  t.curriculum.enabled = true;
  t.curriculum.start = 2;
  t.curriculum.max = 4;
  t.curriculum.rule = "every";
  t.curriculum.every = 7;
  const nlohmann::json tj = t.to_json();
  CHECK(tj["curriculum"] == nlohmann::json{{"start", 2}, {"max", 4}, {"rule", "every"}, {"every", 7}});
  CHECK(TrainConfig::from_json(tj).to_json().dump() == tj.dump());
  t.curriculum.rule = "accuracy";
  t.curriculum.threshold = 0.9;
  CHECK(t.to_json()["curriculum"] ==
        nlohmann::json{{"start", 2}, {"max", 4}, {"rule", "accuracy"}, {"threshold", 0.9}, {"min_steps", 0}});
  CHECK(TrainConfig::from_json(t.to_json()).to_json().dump() == t.to_json().dump());

  TaskConfig k = TaskConfig::from_json({{"name", "reverse"}, {"source_len", 5}, {"segments", 2}, {"seed", 3}});
  CHECK(k.to_json()["name"] == "reverse");
  CHECK(TaskConfig::from_json(k.to_json()).to_json().dump() == k.to_json().dump());

  QaTaskOptions q;
  q.fact_chunks = 2;
  nlohmann::json qj = q.to_json();
  CHECK(qj["fact_chunks"] == 2);
  CHECK(qj.count("byte_label_warmup") == 0);  // 0: not written
  CHECK(QaTaskOptions::from_json(qj).to_json().dump() == qj.dump());

  const TrainingConfig c = TrainingConfig::from_json(tiny_training_json());
  CHECK(TrainingConfig::from_json(c.to_json()).to_json().dump() == c.to_json().dump());
}

TEST_CASE("config fields: the zoo's recorded configs read back to the JSON they hold") {
  // Each zoo model records the training config it was made with, as the Trainer wrote it
  // (config.to_json().dump()): reading and writing it again gives its values byte for byte.
  // Fields added since a file was written come back at their defaults.
  const std::set<std::string> added_since = {"memory_scale", "memory_gate", "save_at_eval", "save_every_seconds"};
  const std::string zoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models/";
  int tasks_checked = 0;
  for (const char* name : {"memformer-copy-unit", "memformer-copy", "memformer-mnist", "memformer-two-facts-ft",
                           "memformer-two-facts", "memoryformer-lm", "mtn-qa", "rmt-copy", "rmt-text", "trxl-copy",
                           "trxl-text", "trxl-text-recall", "memformer-text-recall", "memformer-text",
                           "memformer-text-names", "memformer-general", "rmt-general"}) {
    CAPTURE(name);
    const WeightsFile f = read_weights_file(zoo + name + ".safetensors");
    REQUIRE(f.metadata.count("config") == 1);
    const nlohmann::json rec = nlohmann::json::parse(f.metadata.at("config"));  // as written (no curriculum count)
    const nlohmann::json model = ModelConfig::from_json(rec["model"]).to_json();
    const nlohmann::json train = TrainConfig::from_json(rec["train"]).to_json();
    for (const auto& [part, written] : {std::pair<const char*, const nlohmann::json*>{"model", &model}, {"train", &train}}) {
      CAPTURE(part);
      for (auto it = written->begin(); it != written->end(); ++it) {
        CAPTURE(it.key());
        if (rec[part].contains(it.key())) CHECK(it.value().dump() == rec[part][it.key()].dump());
        else CHECK(added_since.count(it.key()) == 1);
      }
      CHECK(written->size() >= rec[part].size());  // nothing recorded is dropped
    }
    // The tasks that need no data set build here.
    const std::string task = rec["task"]["name"].get<std::string>();
    if (task == "copy" || task == "copy-recall" || task == "qa") {
      const nlohmann::json written = make_task(rec["task"])->to_json();
      for (auto it = rec["task"].begin(); it != rec["task"].end(); ++it) {
        CAPTURE(it.key());
        if (written.contains(it.key())) CHECK(written[it.key()].dump() == it.value().dump());
        // A QA task writes its reading chunks as doc_chunks; `segments` (= doc_chunks + 1,
        // recorded by an earlier version) is read, not written.
        else CHECK((task == "qa" && it.key() == "segments" && it.value() == written["doc_chunks"].get<int64_t>() + 1));
      }
      CHECK(written.size() >= rec["task"].size() - (task == "qa" ? 1 : 0));
      ++tasks_checked;
    }
  }
  CHECK(tasks_checked == 7);
  // One written since memory_scale records every field but memory_gate (added after it): the
  // whole model and train parts agree, that field apart.
  const nlohmann::json text = nlohmann::json::parse(read_weights_file(zoo + "rmt-text.safetensors").metadata.at("config"));
  nlohmann::json read_back = ModelConfig::from_json(text["model"]).to_json();
  CHECK(read_back.at("memory_gate") == false);
  read_back.erase("memory_gate");
  CHECK(read_back.dump() == text["model"].dump());
  CHECK(TrainConfig::from_json(text["train"]).to_json().dump() == text["train"].dump());
}

TEST_CASE("config fields: errors of a nested config carry the nested path - and the model fields their flags") {
  const ConfigError e = field_error("slots", "= 0 is out of range 1..65536");
  CHECK(std::string(e.what()) == "config field 'slots' = 0 is out of range 1..65536");
  CHECK(e.field() == "slots");
  const ConfigError n = nested_error(e, "model");
  CHECK(std::string(n.what()) == "config field 'model.slots' = 0 is out of range 1..65536");
  CHECK(n.field() == "model.slots");
  const ConfigError f = error_in("config file 'a.json': ", n);
  CHECK(std::string(f.what()) == "config file 'a.json': config field 'model.slots' = 0 is out of range 1..65536");
  CHECK(f.field() == "model.slots");
  const ConfigError plain("no field here");
  CHECK(nested_error(plain, "model").field().empty());
  CHECK(std::string(nested_error(plain, "model").what()) == "no field here");

  CHECK(ModelConfig::flag_of("slots") == "--slots");
  CHECK(ModelConfig::flag_of("model.hash_bits") == "--hash-bits");
  CHECK(ModelConfig::flag_of("forgetting") == "--no-forgetting");
  CHECK(ModelConfig::flag_of("ff") == "");
  CHECK(ModelConfig::flag_of("train.lr") == "");

  CHECK(number_text(0) == "0");
  CHECK(number_text(0.25) == "0.25");
  CHECK(number_text(1e-7) == "1e-07");
  CHECK(number_text(std::numeric_limits<double>::quiet_NaN()) == "NaN");
  CHECK(number_text(-std::numeric_limits<double>::infinity()) == "-Inf");
}

TEST_CASE("config fields: every shipped session config, any field of a wrong JSON type, is refused by name") {
  // The sweep a user's hand-edited config goes through: every leaf of the sessions/*.json
  // configs (and every list and object), replaced by a value of each other JSON type, is read
  // and checked, its task built (TrainingConfig::from_json builds it). Whatever fails must fail
  // as the project's own error (ConfigError with the field's dotted path, or a data set's
  // InputError), never as a JSON library or standard exception, which the CLI would report as
  // an internal error. A model or train field is tried in the first config that has it, a task
  // field once per task kind: the same field of another config takes the same code path, and
  // the data sets' tasks (text, mnist) take a while to build, so the sweep stays at seconds.
  const std::vector<nlohmann::json> wrong = {0, -1, 0.5, 1e308, "x", true, nullptr, nlohmann::json::array(),
                                             nlohmann::json::object()};
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(MNEMO_SOURCE_DIR) + "/sessions"))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 40);
  int64_t tried = 0, refused_by_name = 0;
  std::set<std::string> seen, tasks;
  for (const std::string& file : files) {
    const nlohmann::json base = io::read_json_config(file);
    // demo-memformer.json and mtn-demo.json are model configs alone (gui --config).
    const bool model_only = !base.contains("task");
    const std::string task = model_only ? std::string("(none)") : base["task"].value("name", std::string());
    tasks.insert(task);
    // Every path in the config, leaves and containers, except the free-text description.
    std::vector<nlohmann::json::json_pointer> paths;
    std::function<void(const nlohmann::json&, const nlohmann::json::json_pointer&)> walk =
        [&](const nlohmann::json& v, const nlohmann::json::json_pointer& at) {
          if (!at.empty()) paths.push_back(at);
          if (v.is_object())
            for (const auto& [k, c] : v.items()) walk(c, at / k);
          else if (v.is_array())
            for (size_t i = 0; i < v.size(); ++i) walk(v[i], at / i);
        };
    walk(base, nlohmann::json::json_pointer());
    for (const auto& path : paths) {
      std::string dotted = path.to_string().substr(1);
      std::replace(dotted.begin(), dotted.end(), '/', '.');
      const bool task_field = dotted.rfind("task", 0) == 0;
      if (dotted == "description" || !seen.insert(task_field ? task + " " + dotted : dotted).second) continue;
      for (const nlohmann::json& value : wrong) {
        if (value.type() == base[path].type()) continue;
        nlohmann::json j = base;
        j[path] = value;
        ++tried;
        INFO(file << ": " << dotted << " = " << value.dump());
        try {
          // Both readers validate what they read.
          if (model_only)
            ModelConfig::from_json(j.at("model"));
          else
            TrainingConfig::from_json(j);
        } catch (const ConfigError& e) {
          ++refused_by_name;
          // The error names the field that was changed, or one inside it (a replaced object
          // is refused at the first field it lacks), or the field it must agree with (a model
          // config alone that is not an object says so without a field).
          CHECK_MESSAGE((!e.field().empty() || (model_only && dotted == "model")), e.what());
        } catch (const Error&) {
          // A data set that is not fetched here (InputError / DatasetError): the config was read.
        } catch (const std::exception& e) {
          FAIL_CHECK("not the project's error: " << e.what());
        }
      }
    }
  }
  MESSAGE(tried << " wrong-typed fields tried over " << files.size() << " configs of " << tasks.size()
                << " task kinds; " << refused_by_name << " refused with ConfigError");
  CHECK(tasks.size() >= 9);
  CHECK(refused_by_name > tried / 2);
}

TEST_CASE("config fields: the schema lists every row with its kind - range - default - flag and help") {
  FieldsDemo defaults;
  defaults.count = 5;  // the default written is the struct's value passed in
  const nlohmann::json s = FieldsDemo::fields().schema(defaults);
  REQUIRE(s.size() == 6);
  CHECK(s[0] == nlohmann::json::parse(
                    R"({"name":"count","kind":"int","help":"how many","flag":"--count","default":5,"min":1,"max":9})"));
  CHECK(s[1] == nlohmann::json::parse(
                    R"({"name":"ratio","kind":"real","help":"a share","default":0.5,"min":0.0,"max":1.0,"min_open":true,"max_open":false})"));
  CHECK(s[2] == nlohmann::json::parse(R"({"name":"on","kind":"bool","help":"a switch","default":true})"));
  CHECK(s[3] == nlohmann::json::parse(
                    R"({"name":"mode","kind":"string","help":"which one","default":"a","allowed":["a","b","c"]})"));
  CHECK(s[4] == nlohmann::json::parse(R"({"name":"seed","kind":"seed","help":"a seed","default":7})"));
  CHECK(s[5]["max"].is_null());  // an unbounded end: null (JSON has no infinity)
  CHECK(s[5]["max_open"] == true);

  // The program's schema: every table, each row named as its table names it, defaults as the structs'.
  const nlohmann::json all = config_schema();
  CHECK(all["schema_version"] == 1);
  CHECK(all["model"].size() == ModelConfig::fields().fields().size());
  CHECK(all["train"].size() == TrainConfig::fields().fields().size());
  CHECK(all["train.curriculum"].size() == CurriculumConfig::fields().fields().size());
  CHECK(all["task"].size() == TaskConfig::fields().fields().size());
  CHECK(all["task (qa)"].size() == QaTaskOptions::fields().fields().size());
  const ModelConfig m;
  for (const auto& r : all["model"]) {
    if (r["name"] == "slots") CHECK(r["default"] == m.slots);
    if (r["name"] == "model") CHECK(r["allowed"] == nlohmann::json(ModelConfig::known_models()));
  }
  CHECK(all["train"][0]["name"] == TrainConfig::fields().fields()[0].name);
}

TEST_CASE("config fields: trxl's cache length is cache_len - its -1 is slots, as every trxl file was read - trxl-rmt's is segment_len") {
  auto cache_of = [](const ModelConfig& c) {
    return make_model(c, 1)->initial_memory(1).at("cache.0").size(1);
  };
  ModelConfig xl = test::tiny_decoder("trxl", 4, 6);
  CHECK(xl.cache_len == -1);
  CHECK(cache_of(xl) == 4);  // -1: slots
  xl.cache_len = 7;
  CHECK(cache_of(xl) == 7);  // its own field: slots no longer sets it
  xl.slots = 9;
  CHECK(cache_of(xl) == 7);
  ModelConfig both = test::tiny_decoder("trxl-rmt", 2, 6);
  CHECK(cache_of(both) == 6);  // -1: segment_len
  both.cache_len = 3;
  CHECK(cache_of(both) == 3);
  CHECK(ModelConfig::flag_of("model.cache_len") == "--cache-len");
  // A config file of either spelling, and its round trip.
  const ModelConfig file = ModelConfig::from_json({{"model", "trxl"}, {"slots", 5}, {"segment_len", 6}, {"dim", 16},
                                                   {"heads", 2}, {"layers", 1}, {"ff", 32}});
  CHECK(cache_of(file) == 5);
  CHECK(cache_of(ModelConfig::from_json(file.to_json())) == 5);
  nlohmann::json own = file.to_json();
  own["cache_len"] = 8;
  CHECK(cache_of(ModelConfig::from_json(own)) == 8);
  // The zoo's trxl models recorded "cache_len": -1 beside their slots: their cache is as long as
  // it was when they were trained (tests/cli/test_zoo.cpp checks their cards' figures).
  int zoo = 0;
  for (const char* name : {"trxl-copy", "trxl-text", "trxl-text-recall"}) {
    CAPTURE(name);
    const WeightsFile f = read_weights_file(std::string(MNEMO_SOURCE_DIR) + "/assets/models/" + name + ".safetensors");
    const nlohmann::json& recorded = f.training_config["model"];
    REQUIRE(recorded["model"] == "trxl");
    CHECK(recorded["cache_len"] == -1);
    const ModelConfig cfg = ModelConfig::from_json(recorded);
    CHECK(cfg.cache_len == -1);
    CHECK(cache_of(cfg) == recorded["slots"].get<int64_t>());
    ++zoo;
  }
  CHECK(zoo == 3);
}
