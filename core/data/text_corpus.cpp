#include "core/data/text_corpus.h"

#include "core/data/dataset_cache.h"
#include "core/data/moby_dick.h"
#include "core/data/sotu.h"
#include "core/data/task_fields.h"
#include "core/io/atomic_file.h"
#include "core/platform/mapped_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace mnemo {

namespace fs = std::filesystem;

namespace {

const char* kCorpusField = "task.corpus";

std::string corpus_fix() {
  return "give a UTF-8 text file, a directory of text files, a list of them, or a named corpus (" + named_corpora_text() + ")";
}

// FNV-1a 64 over `s`, continuing from `h`.
uint64_t fnv1a(const std::string& s, uint64_t h = 0xCBF29CE484222325ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Reads up to n bytes at `offset` of the open file fd into dst; the count read, -1 on error.
int64_t pread_all(int fd, char* dst, int64_t n, int64_t offset) {
  int64_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, dst + got, static_cast<size_t>(n - got), static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += r;
  }
  return got;
}

// Whether the first bytes of a file look binary; a UTF-8 character cut by the end of a probe
// shorter than the file is not held against it.
bool probe_looks_binary(std::string probe, bool whole_file) {
  if (!whole_file) {
    size_t k = probe.size();
    size_t back = 0;
    while (k > 0 && back < 3 && (static_cast<unsigned char>(probe[k - 1]) & 0xC0) == 0x80) --k, ++back;
    if (k > 0 && static_cast<unsigned char>(probe[k - 1]) >= 0xC0) probe.resize(k - 1);
  }
  Document d;
  d.bytes = probe;
  return d.looks_binary();
}

}  // namespace

const std::vector<std::string>& named_corpora() {
  static const std::vector<std::string> k = {"sotu", "moby-dick", "general"};
  return k;
}

const std::vector<std::string>& general_genres() {
  static const std::vector<std::string> k = {"speeches", "novel", "scripture", "fortunes", "jargon", "mail"};
  return k;
}

bool is_named_corpus(const std::string& name) {
  const auto& names = named_corpora();
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  const std::string prefix = "general/";
  if (name.rfind(prefix, 0) != 0) return false;
  const auto& g = general_genres();
  return std::find(g.begin(), g.end(), name.substr(prefix.size())) != g.end();
}

std::string named_corpora_text() {
  return "sotu, moby-dick, general, or one genre of general: general/speeches, general/novel, general/scripture, "
         "general/fortunes, general/jargon, general/mail";
}

std::string corpus_group(const std::string& key) {
  const std::string prefix = "general/";
  if (key.rfind(prefix, 0) != 0) return "";
  const size_t slash = key.find('/', prefix.size());
  return slash == std::string::npos ? "" : key.substr(prefix.size(), slash - prefix.size());
}

TextCorpus::TextCorpus(const nlohmann::json& corpus, uint64_t seed, double valid_fraction, double test_fraction,
                       int64_t window) {
  std::vector<std::string> entries;
  if (corpus.is_string()) {
    entries.push_back(corpus.get<std::string>());
  } else if (corpus.is_array() && !corpus.empty()) {
    for (const auto& e : corpus) {
      if (!e.is_string())
        throw field_error(kCorpusField, "must hold strings (paths or names), got " + e.dump());
      entries.push_back(e.get<std::string>());
    }
  } else {
    throw field_error(kCorpusField,
                      "is missing or not a path, a name or a list of them (got " + corpus.dump() + "); " + corpus_fix());
  }
  resolved_ = nlohmann::json::array();
  for (const auto& e : entries) {
    if (e.empty()) throw field_error(kCorpusField, "holds an empty path; " + corpus_fix());
    add_entry(e);
  }
  if (corpus.is_string()) resolved_ = resolved_[0];
  int64_t total = 0;
  for (const auto& d : docs_) total += d.size;
  if (total == 0)
    throw field_error(kCorpusField, "= " + corpus.dump() + " holds no text; " + corpus_fix());
  assign_splits(seed, valid_fraction, test_fraction);
  if (window > 0) ensure_windows(window, valid_fraction, test_fraction);
}

void TextCorpus::ensure_windows(int64_t window, double valid_fraction, double test_fraction) {
  auto has_window = [&](int s) {
    for (const auto& r : ranges_[s])
      if (r.size() >= window) return true;
    return false;
  };
  if (has_window(0) && has_window(1) && has_window(2)) return;
  // Only the files whose split is ours to choose (not the named corpora's) take part.
  auto movable = [&](const Range& r) {
    const Doc& d = docs_[static_cast<size_t>(r.doc)];
    return !d.in_memory && !d.fixed_split;
  };
  std::vector<Range> kept[3];
  std::vector<Range> files;
  for (int s = 0; s < 3; ++s)
    for (const auto& r : ranges_[s]) (movable(r) ? files : kept[s]).push_back(r);
  if (files.empty()) return;
  // Every file whole in train (in document order), then blocks for test and valid.
  std::sort(files.begin(), files.end(), [](const Range& a, const Range& b) { return a.doc < b.doc; });
  std::vector<Range> merged;
  for (const auto& r : files) {
    if (!merged.empty() && merged.back().doc == r.doc) merged.back().end = std::max(merged.back().end, r.end);
    else merged.push_back({r.doc, 0, docs_[static_cast<size_t>(r.doc)].size});
  }
  std::vector<Range> train = merged, held[3];
  auto kept_window = [&](int s) {
    return std::any_of(kept[s].begin(), kept[s].end(), [&](const Range& r) { return r.size() >= window; });
  };
  for (int s : {2, 1}) {
    if (kept_window(s)) continue;
    const double fraction = s == 2 ? test_fraction : valid_fraction;
    // What the range keeps: a training window, and room for valid's block when test is cut first.
    const int64_t reserve = window * (s == 2 && !kept_window(1) ? 2 : 1);
    auto longest = std::max_element(train.begin(), train.end(),
                                    [](const Range& a, const Range& b) { return a.size() < b.size(); });
    if (longest != train.end() && longest->size() >= window + reserve) {
      const int64_t cut = std::min(longest->size() - reserve,
                                   std::max<int64_t>(window, std::llround(static_cast<double>(longest->size()) * fraction)));
      held[s].push_back({longest->doc, longest->end - cut, longest->end});
      longest->end -= cut;
      continue;
    }
    // A whole file of at least a window, the shortest such, while training keeps another.
    int64_t windows = 0;
    for (const auto& r : train) windows += r.size() >= window;
    if (windows < 2) continue;
    auto pick = train.end();
    for (auto it = train.begin(); it != train.end(); ++it)
      if (it->size() >= window && (pick == train.end() || it->size() < pick->size())) pick = it;
    held[s].push_back(*pick);
    train.erase(pick);
  }
  ranges_[0] = kept[0];
  ranges_[0].insert(ranges_[0].end(), train.begin(), train.end());
  for (int s : {1, 2}) {
    ranges_[s] = kept[s];
    ranges_[s].insert(ranges_[s].end(), held[s].begin(), held[s].end());
  }
  for (auto& v : ranges_)
    std::sort(v.begin(), v.end(), [](const Range& a, const Range& b) { return a.doc != b.doc ? a.doc < b.doc : a.begin < b.begin; });
  for (size_t i = 0; i < docs_.size(); ++i)
    if (!docs_[i].in_memory && !docs_[i].fixed_split) docs_[i].split = Split::kTrain;  // a range's split is its list
}

void TextCorpus::add_entry(const std::string& entry) {
  struct stat st {};
  const bool there = ::stat(entry.c_str(), &st) == 0;
  const int err = there ? 0 : errno;
  if (!there && err == ENOENT && is_named_corpus(entry)) {
    resolved_.push_back(entry);
    add_named(entry);
    return;
  }
  const std::string abs = fs::absolute(fs::path(entry)).lexically_normal().string();
  resolved_.push_back(abs);
  const std::string where = std::string(kCorpusField) + ": '" + entry + "'";
  if (!there && (err == ENOENT || err == ENOTDIR))
    throw ConfigError(where + " does not exist (and is not a named corpus: " + named_corpora_text() + "); " + corpus_fix());
  if (!there) throw ConfigError(where + " cannot be read (" + io::errno_text(err) + "); make it readable or leave it out");
  if (S_ISDIR(st.st_mode)) {
    skips_.clear();
    const size_t before = docs_.size();
    std::vector<std::pair<std::string, std::string>> files;  // (relative key, path)
    std::error_code ec;
    fs::recursive_directory_iterator it(abs, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) throw ConfigError(where + " cannot be read (" + ec.message() + "); make it readable or leave it out");
    for (; it != end; it.increment(ec)) {
      if (ec) break;
      const fs::path p = it->path();
      if (p.filename().string().rfind('.', 0) == 0) {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_directory(ec) && !it->is_symlink(ec)) continue;
      files.emplace_back(p.lexically_relative(abs).generic_string(), p.string());
    }
    if (ec)
      throw ConfigError(where + " could not be listed (" + ec.message() + "); make it readable or leave it out");
    std::sort(files.begin(), files.end());
    for (const auto& [key, path] : files) add_file(path, key, entry, false);
    int64_t skipped = 0;
    std::string why;
    for (const auto& [reason, n] : skips_) {
      skipped += n.first;
      warnings_.push_back(std::to_string(n.first) + " " + reason + " skipped in " + entry + " (e.g. " + n.second + ")");
      why += (why.empty() ? "" : ", ") + std::to_string(n.first) + " " + reason;
    }
    if (docs_.size() == before)
      throw ConfigError(where + " is a directory without text files (" + (skipped ? why : std::string("it is empty")) +
                        "); add UTF-8 text files to it or give another path");
    return;
  }
  add_file(abs, fs::path(abs).filename().string(), entry, true);
}

void TextCorpus::add_file(const std::string& path, const std::string& key, const std::string& entry, bool listed) {
  const std::string abs = fs::absolute(fs::path(path)).lexically_normal().string();
  std::error_code ec;
  const fs::path canon = fs::weakly_canonical(abs, ec);
  const std::string id = ec ? abs : canon.string();
  if (seen_.count(id)) return;
  const std::string where = std::string(kCorpusField) + ": '" + (listed ? entry : path) + "'";
  auto skip = [&](const std::string& reason, const std::string& error) {
    if (listed) throw ConfigError(where + " " + error);
    auto it = std::find_if(skips_.begin(), skips_.end(), [&](const auto& s) { return s.first == reason; });
    if (it == skips_.end()) skips_.push_back({reason, {1, path}});
    else ++it->second.first;
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return skip("unreadable files", "cannot be read (" + io::errno_text(errno) + "); make it readable or leave it out");
  if (!S_ISREG(st.st_mode))
    return skip("non-regular files", "is not a regular file; " + corpus_fix());
  if (st.st_size == 0) return skip("empty files", "is empty; " + corpus_fix());
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return skip("unreadable files", "cannot be read (" + io::errno_text(errno) + "); make it readable or leave it out");
  std::string probe(static_cast<size_t>(std::min<int64_t>(kTextProbeBytes, st.st_size)), '\0');
  const int64_t got = pread_all(fd, probe.data(), static_cast<int64_t>(probe.size()), 0);
  const int read_err = errno;
  ::close(fd);
  if (got < 0)
    return skip("unreadable files", "cannot be read (" + io::errno_text(read_err) + "); make it readable or leave it out");
  probe.resize(static_cast<size_t>(got));
  if (probe_looks_binary(probe, got == st.st_size))
    return skip("binary files", "is a binary file (it holds NUL bytes or is not UTF-8 in its first " +
                                    std::to_string(kTextProbeBytes >> 10) + " KiB); " + corpus_fix());
  seen_.insert(id);
  Doc d;
  d.path = abs;
  d.key = key;
  d.size = st.st_size;
  docs_.push_back(std::move(d));
}

void TextCorpus::add_general(const std::string& name) {
  // <cache>/general/package/{train,valid,test}/<genre>/<document>.txt (.ci/general_corpus.py):
  // files read window by window like any other, each keeping the split its folder names.
  std::string pkg;
  try {
    pkg = dataset_package_dir("general");
  } catch (const DatasetError& e) {
    throw ConfigError(std::string(kCorpusField) + ": '" + name + "': " + e.what());
  }
  const std::string only = name == "general" ? "" : name.substr(std::string("general/").size());
  const size_t before = docs_.size();
  skips_.clear();
  for (const Split split : {Split::kTrain, Split::kValid, Split::kTest}) {
    for (const auto& genre : general_genres()) {
      if (!only.empty() && genre != only) continue;
      const std::string dir = pkg + "/" + split_name(split) + "/" + genre;
      std::vector<std::string> names;
      std::error_code ec;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".txt") names.push_back(it->path().filename().string());
      if (ec)
        throw ConfigError(std::string(kCorpusField) + ": '" + name + "': " + dir + " cannot be listed (" + ec.message() +
                          "); " + dataset_fix_hint("general", pkg));
      std::sort(names.begin(), names.end());
      for (const auto& file : names) {
        const size_t n = docs_.size();
        add_file(dir + "/" + file, "general/" + genre + "/" + file.substr(0, file.size() - 4), name, false);
        if (docs_.size() == n) continue;
        docs_.back().split = split;
        docs_.back().fixed_split = true;
      }
    }
  }
  if (!skips_.empty() || docs_.size() == before)
    throw ConfigError(std::string(kCorpusField) + ": '" + name + "': the cached corpus in " + pkg +
                      " is damaged (" + (skips_.empty() ? std::string("no documents") : skips_[0].first + ", e.g. " + skips_[0].second.second) +
                      "); " + dataset_fix_hint("general", pkg));
}

void TextCorpus::add_named(const std::string& name) {
  if (!seen_.insert(name).second) return;
  if (name.rfind("general", 0) == 0) return add_general(name);
  std::vector<std::pair<Document, Split>> named;
  try {
    if (name == "sotu") {
      for (const auto& a : load_sotu()) named.emplace_back(sotu_document(a), sotu_split_of(a.year));
    } else {
      for (const auto& c : load_moby_dick()) named.emplace_back(moby_dick_document(c), moby_dick_split_of(c.number));
    }
  } catch (const DatasetError& e) {
    throw ConfigError(std::string(kCorpusField) + ": '" + name + "': " + e.what());
  }
  for (auto& [doc, split] : named) {
    Doc d;
    d.path = doc.path;
    d.key = doc.path;
    d.size = doc.size();
    d.text = std::move(doc);
    d.in_memory = true;
    d.split = split;
    docs_.push_back(std::move(d));
  }
}

void TextCorpus::assign_splits(uint64_t seed, double valid_fraction, double test_fraction) {
  std::vector<size_t> files;
  for (size_t i = 0; i < docs_.size(); ++i)
    if (!docs_[i].in_memory && !docs_[i].fixed_split) files.push_back(i);
  if (files.size() == 1 && files.size() == docs_.size()) {
    const int64_t n = docs_[0].size;
    const int64_t b = n - std::llround(static_cast<double>(n) * test_fraction);
    const int64_t a = b - std::llround(static_cast<double>(n) * valid_fraction);
    ranges_[0].push_back({0, 0, a});
    ranges_[1].push_back({0, a, b});
    ranges_[2].push_back({0, b, n});
    return;
  }
  const uint64_t salt = splitmix64(seed ^ 0x7E47C0A5ull);
  for (size_t i : files) {
    Doc& d = docs_[i];
    if (d.fixed_split) continue;
    d.hash = splitmix64(fnv1a(d.key) ^ salt);
    const double u = static_cast<double>(d.hash >> 11) * 0x1.0p-53;
    d.split = u < test_fraction ? Split::kTest : u < test_fraction + valid_fraction ? Split::kValid : Split::kTrain;
  }
  if (files.size() >= 3) {
    for (;;) {
      std::vector<size_t> members[3];
      for (size_t i : files) members[static_cast<int>(docs_[i].split)].push_back(i);
      int empty = -1, largest = 0;
      for (int s = 0; s < 3; ++s) {
        if (members[s].empty() && empty < 0) empty = s;
        if (members[s].size() > members[largest].size()) largest = s;
      }
      if (empty < 0) break;
      const size_t move = *std::min_element(members[largest].begin(), members[largest].end(),
                                            [&](size_t x, size_t y) { return docs_[x].hash < docs_[y].hash; });
      docs_[move].split = static_cast<Split>(empty);
    }
  }
  for (size_t i = 0; i < docs_.size(); ++i)
    ranges_[static_cast<int>(docs_[i].split)].push_back({static_cast<int64_t>(i), 0, docs_[i].size});
}

std::vector<CorpusRange> TextCorpus::split_ranges(Split s) const {
  std::vector<CorpusRange> out;
  for (const auto& r : ranges(s)) out.push_back({document_path(r.doc), r.begin, r.end});
  return out;
}

nlohmann::json TextCorpus::split_record() const {
  const bool list = ranges_[0].size() + ranges_[1].size() + ranges_[2].size() <= static_cast<size_t>(kMaxListedRanges);
  nlohmann::json out = nlohmann::json::object();
  for (int s = 0; s < 3; ++s) {
    uint64_t h = 0xCBF29CE484222325ull;
    int64_t bytes = 0;
    nlohmann::json items = nlohmann::json::array();
    for (const auto& r : split_ranges(static_cast<Split>(s))) {
      h = fnv1a(r.path + "\t" + std::to_string(r.begin) + "\t" + std::to_string(r.end) + "\n", h);
      bytes += r.end - r.begin;
      if (list) items.push_back({r.path, r.begin, r.end});
    }
    nlohmann::json j = {{"ranges", ranges_[s].size()}, {"bytes", bytes}, {"hash", hex64(h)}};
    if (list) j["list"] = std::move(items);
    out[split_name(static_cast<Split>(s))] = std::move(j);
  }
  return out;
}

void TextCorpus::read(int64_t doc, int64_t begin, int64_t n, int64_t* out) const {
  const Doc& d = docs_[static_cast<size_t>(doc)];
  TORCH_CHECK(begin >= 0 && n >= 0 && begin + n <= d.size, "text corpus: read past the end of ", d.path);
  if (d.in_memory) {
    for (int64_t k = 0; k < n; ++k) out[k] = d.text.id(begin + k);
    return;
  }
  std::shared_ptr<const platform::MappedFile> map;
  if (d.size >= kMapMinBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (maps_.empty()) maps_.resize(docs_.size());
    map = maps_[static_cast<size_t>(doc)];
    if (!map && live_maps_ < kMaxCorpusMaps) {
      const int fd = ::open(d.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        map = platform::MappedFile::map(fd, static_cast<size_t>(d.size));
        ::close(fd);
      }
      if (map) {
        maps_[static_cast<size_t>(doc)] = map;
        ++live_maps_;
      }
    }
  }
  if (map) {
    const auto* p = reinterpret_cast<const unsigned char*>(map->data()) + begin;
    for (int64_t k = 0; k < n; ++k) out[k] = p[k];
    map->release(static_cast<size_t>(begin), static_cast<size_t>(begin + n));
    return;
  }
  std::string buf(static_cast<size_t>(n), '\0');
  const int fd = ::open(d.path.c_str(), O_RDONLY | O_CLOEXEC);
  const int64_t got = fd < 0 ? -1 : pread_all(fd, buf.data(), n, begin);
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (got != n)
    throw IoError("text corpus: cannot read bytes " + std::to_string(begin) + ".." + std::to_string(begin + n) + " of " +
                  d.path + (got < 0 ? " (" + io::errno_text(err) + ")" : " (the file is shorter than when it was opened)") +
                  "; it changed or went away since training started");
  for (int64_t k = 0; k < n; ++k) out[k] = static_cast<unsigned char>(buf[static_cast<size_t>(k)]);
}

}  // namespace mnemo
