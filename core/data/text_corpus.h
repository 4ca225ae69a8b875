// A text corpus for the "text" task (core/data/text_task.h): documents of bytes from files,
// directories of text files or the named public corpora, split into train / valid / test by
// document, and read a window at a time: the corpus is never loaded whole.
//
// task.corpus is a string or a list of strings; each entry is, in this order:
//   * an existing path (a path wins over a name of the same spelling): a file is one
//     document; a directory is walked recursively, its files in sorted order of their
//     relative paths, each one document (entries whose name starts with '.' are left out;
//     links to files are followed, links to directories are not);
//   * "sotu" or "moby-dick": that data set from the cache (core/data/sotu.h,
//     core/data/moby_dick.h), one document per address / chapter;
//   * "general" or "general/<genre>": the general corpus (or one genre of it) built by
//     `bash .ci/fetch-data general`: files read like any other, each in the split its folder
//     names (docs/datasets.md#general);
//   * anything else: a ConfigError saying that the path does not exist.
// A file listed twice (directly or through directories) is read once. A file is text when
// its first kTextProbeBytes bytes hold no NUL and are UTF-8 (Document::looks_binary; a
// character cut by the probe's end is allowed).
// Errors and skips. ConfigError, naming the path and the fix: an entry of task.corpus that is
// missing, an empty file, an unreadable file, a binary file, or a directory with no text file
// (the message counts what was skipped there and why); a data set not in the cache. Inside a
// directory, empty, unreadable, binary and other non-regular files are skipped and counted in
// warnings().
// Split:
//   * named corpora: their fixed split (Moby Dick by chapter number, SOTU by year, general by
//     the folder its builder put each document in);
//   * exactly one file and no named corpus: contiguous blocks [0, a) train, [a, b) valid,
//     [b, size) test, with b = size - round(size * test_fraction) and
//     a = b - round(size * valid_fraction);
//   * otherwise every file by a hash of (seed, key), key = its path relative to the directory
//     entry it was found under (a file entry: its file name): u = hash / 2^64; u <
//     test_fraction -> test, u < test_fraction + valid_fraction -> valid, else train, so a
//     file keeps its split when others are added or removed. With 3 or more such files no
//     split is empty: while one is, the file with the smallest hash in the split holding the
//     most files moves to it.
//   * then, when window > 0 and a split holds no range of a window (two files, or every
//     held-out file shorter than a window): every file becomes training text again, and blocks
//     are cut from the end of the longest training range - test first, then valid - each
//     max(window, round(fraction x its size)) bytes, leaving the range at least a window; where
//     no range is long enough for that, a whole file of at least a window moves while training
//     keeps another. What still lacks a window is left to TextTask's error, whose advice
//     (shorter windows) makes this rule succeed.
// Reading: files of kMapMinBytes or more are memory-mapped on their first read (at most
// kMaxCorpusMaps at a time, past that read with pread), and the pages of every window are
// released once copied, so resident memory stays bounded however many windows are drawn;
// smaller files are read with pread. Only the listing (path, size) stays in memory, plus
// the text of the named corpora. read() may be called from several threads.
#pragma once
#include "core/data/document.h"
#include "core/data/tasks.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace mnemo {

inline constexpr int64_t kTextProbeBytes = int64_t{64} << 10;
inline constexpr int kMaxCorpusMaps = 16;
// to_json's split record lists every range while the three splits have at most this many
// together; past it, only their counts, byte totals and hashes.
inline constexpr int64_t kMaxListedRanges = 2000;
// The named public corpora task.corpus may give: sotu, moby-dick and general (and one genre of
// general: "general/<genre>", docs/datasets.md#general).
const std::vector<std::string>& named_corpora();
// The genres of the general corpus, in the order its builder writes them.
const std::vector<std::string>& general_genres();
// Whether `name` is a named corpus or a genre of general.
bool is_named_corpus(const std::string& name);
// The names as a list for messages.
std::string named_corpora_text();
// The group a document key belongs to: the genre for general's documents ("mail" for
// "general/mail/mail-003"), "" for any other.
std::string corpus_group(const std::string& key);

// Bytes [begin, end) of a document: a file path as found, or a named corpus's document
// ("sotu/1790_george_washington_n", "moby-dick/chapter_1").
struct CorpusRange {
  std::string path;
  int64_t begin = 0, end = 0;
};

class TextCorpus {
 public:
  // Lists the corpus and checks every file (above); a ConfigError for a bad corpus names
  // task.corpus and the path.
  // window > 0: the bytes of one window (TextTask); a split the rules above leave without a
  // document or block of that size is given one (below).
  TextCorpus(const nlohmann::json& corpus, uint64_t seed, double valid_fraction, double test_fraction,
             int64_t window = 0);
  TextCorpus(const TextCorpus&) = delete;
  TextCorpus& operator=(const TextCorpus&) = delete;

  // A range of one document: doc is an index into the documents.
  struct Range {
    int64_t doc = 0, begin = 0, end = 0;
    int64_t size() const { return end - begin; }
  };
  const std::vector<Range>& ranges(Split s) const { return ranges_[static_cast<int>(s)]; }
  // The same with the documents' paths: which files or byte ranges the split holds.
  std::vector<CorpusRange> split_ranges(Split s) const;
  // {"train": {"ranges": n, "bytes": b, "hash": "<16 hex digits>", "list": [[path, begin, end], ...]},
  //  "valid": ..., "test": ...}; "list" only while kMaxListedRanges allows. hash: FNV-1a 64
  // of the lines "<path>\t<begin>\t<end>\n" of the split's ranges in order.
  nlohmann::json split_record() const;
  int64_t documents() const { return static_cast<int64_t>(docs_.size()); }
  const std::string& document_path(int64_t doc) const { return docs_[static_cast<size_t>(doc)].path; }
  int64_t document_size(int64_t doc) const { return docs_[static_cast<size_t>(doc)].size; }
  // The document's key: its path relative to the directory entry it was found under, or its
  // name in a named corpus ("general/mail/mail-003", "sotu/1790_george_washington_n").
  const std::string& document_key(int64_t doc) const { return docs_[static_cast<size_t>(doc)].key; }
  // task.corpus with every path made absolute and normal (names as given).
  const nlohmann::json& resolved() const { return resolved_; }
  // What was skipped, one line per reason ("3 binary files skipped in /data/x (e.g. /data/x/a.bin)").
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Writes bytes [begin, begin + n) of document `doc` to out as byte ids (0..255). IoError
  // when a file cannot be read there (it shrank or went away since the corpus was opened).
  void read(int64_t doc, int64_t begin, int64_t n, int64_t* out) const;

 private:
  struct Doc {
    std::string path, key;
    int64_t size = 0;
    Document text;         // the bytes of a named corpus's document; empty for files
    bool in_memory = false;
    Split split = Split::kTrain;  // named corpora: their fixed split
    bool fixed_split = false;     // a file of a named corpus (general): split set, not hashed
    uint64_t hash = 0;            // files: the split hash
  };
  void add_entry(const std::string& entry);
  void add_named(const std::string& name);
  void add_general(const std::string& name);
  void add_file(const std::string& path, const std::string& key, const std::string& entry, bool listed);
  void assign_splits(uint64_t seed, double valid_fraction, double test_fraction);
  void ensure_windows(int64_t window, double valid_fraction, double test_fraction);

  std::vector<Doc> docs_;
  std::vector<Range> ranges_[3];
  std::vector<std::string> warnings_;
  nlohmann::json resolved_;
  std::set<std::string> seen_;  // real paths and names already added
  // Skips of the directory being walked: reason -> (count, first path).
  std::vector<std::pair<std::string, std::pair<int64_t, std::string>>> skips_;
  mutable std::mutex mu_;
  mutable std::vector<std::shared_ptr<const platform::MappedFile>> maps_;  // per document, lazily
  mutable int live_maps_ = 0;
};

}  // namespace mnemo
