// The "text" task: byte-level language modelling over any corpus (core/data/text_corpus.h:
// files, directories of text files, lists of them, the named corpora "sotu" and
// "moby-dick"), split by document, sampled window by window.
//
// {"name": "text", "corpus": PATH | NAME | [PATH | NAME, ...], "length": 256, "segments": 1,
//  "seed": 1, "valid_fraction": 0.1, "test_fraction": 0.1, "valid_size": 0, "test_size": 0}
//   length L_total (2..65536) must be a multiple of segments S; L = length / segments. An
//   example is a window w of (S+1) L bytes of one range of one split (the moby-dick layout,
//   core/data/lm_tasks.h ByteWindowTask: segment t holds tokens w[tL, (t+1)L), targets w[tL+1, (t+1)L+1),
//   next_tokens w[(t+1)L, (t+2)L)). Windows never cross a range, so never a document or a
//   split boundary; a range shorter than one window gives none (it is not joined to the
//   next one; warnings() counts such ranges per split). Training window i starts at a uniform
//   position among all start positions of the training ranges, drawn from (seed, i); valid /
//   test window i is tile i mod size of the held-out ranges in order (tiles at multiples of
//   length from each range's start), valid_size / test_size > 0 capping the count.
//   split_size(train) is the number of such tiles in the training ranges.
//   valid_fraction and test_fraction are each in (0, 0.5]; seed also salts the split hash.
//   Every split needs at least one window: a ConfigError names the split and what to change.
//   "recur": p in [0, 1] (default 0) is a curriculum that makes distant text worth remembering:
//   a fraction p of the windows (every split; chosen from (seed, split, index)) has a passage
//   of n bytes, n uniform in [L/2, 2L], copied from earlier in the window to a later place at
//   least 2L bytes after its end, over what stood there (a quotation repeated further on). At
//   the copy's first byte the source lies wholly before the previous segment, so only a memory
//   can carry it (not Transformer-XL's one-segment cache, not Memformer's encoder view of the
//   previous segment). Needs a window of at least 2 L/2 + 2L bytes (ConfigError otherwise).
//   recurrence(s, index) says where (for tests and eval). docs/training.md#text.
//   "names": p in [0, 1] (default 0), the curriculum that teaches slots to carry words
//   (docs/training.md#text): a fraction p of the windows (from their own stream of (seed,
//   split, index)) get made-up names, a capital and 7-13 random lower-case letters that no
//   language model can guess, each written after a space and again after the first space at
//   least 1.5 L..3.5 L bytes further on (48-112 bytes for L = 32: mostly two segments back),
//   one pair about every 2 L bytes (L..3 L apart); the text after each insertion moves on and
//   the window keeps its length (its tail is dropped). names_at(s, index) lists them.
//   "doubled": p in [0, 1] (default 0): a fraction p of the windows (their own stream) are
//   replaced by doubled passages - random lower-case words of 2-9 letters, each passage of
//   40-60 bytes written twice in a row - where only reading the passage back predicts its copy.
//   A window drawn for "doubled" gets no names and no recur.
//   "balance": true (default false) draws training windows group by group: a group uniform
//   among the groups that hold a training window, then a start position uniform within it, both
//   from the window's draw. A document's group: its genre in the general corpus, else the first
//   component of its key (a named corpus: "sotu"; a file found under a directory entry: the
//   folder it is in there, "plays" for plays/hamlet.txt; "" for a file at the entry's top).
//   With one group this is the uniform draw above, window for window. Held-out windows are
//   unchanged. balance_groups() lists the groups and their shares.
// to_json() gives the config with "corpus" resolved (absolute paths) and "split", the split
// record (TextCorpus::split_record: per split its ranges, bytes and hash, and the list of
// (path, begin, end) while it is short). A config that carries "split" is checked against the
// corpus as it is now: a different split (the files changed) is a ConfigError.
#pragma once
#include "core/data/lm_tasks.h"
#include "core/data/text_corpus.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace mnemo {

class TextTask : public ByteWindowTask {
 public:
  // ConfigError for a bad field or corpus (the path named).
  explicit TextTask(const nlohmann::json& cfg);
  std::string name() const override { return "text"; }
  nlohmann::json to_json() const override;
  int64_t split_size(Split s) const override;
  TaskBatch batch(Split s, const std::vector<int64_t>& indices, torch::Device device) const override;
  std::vector<std::string> warnings() const override;

  // Where example `index` of split `s` lies: bytes [begin, begin + (S+1) L) of document `doc`.
  struct Window {
    int64_t doc = 0, begin = 0;
  };
  Window window(Split s, int64_t index) const;
  // The passage that example `index` of split `s` repeats (recur): window bytes [from, from + n)
  // copied to [to, to + n); n == 0 when this window has none.
  struct Recurrence {
    int64_t from = 0, to = 0, n = 0;
  };
  Recurrence recurrence(Split s, int64_t index) const;
  double recur() const { return recur_; }
  // The made-up names of example `index` (names): for each pair, the window offsets of the
  // capital of its first and second writing and its length in bytes (capital included);
  // empty when the window has none.
  struct Name {
    int64_t first = 0, second = 0, n = 0;
  };
  std::vector<Name> names_at(Split s, int64_t index) const;
  // The groups training windows are drawn from (balance), in first-seen order of the training
  // ranges, with the probability a window lands in each: equal with balance, else their share
  // of the training start positions.
  struct Group {
    std::string name;
    double share = 0;
  };
  std::vector<Group> balance_groups() const;
  bool balance() const { return balance_; }
  // Whether example `index` is a window of doubled passages (doubled).
  bool doubled_at(Split s, int64_t index) const;
  const TextCorpus& corpus() const { return *corpus_; }
  // Per split, the (file path, byte begin, byte end) ranges it holds.
  std::vector<CorpusRange> split_ranges(Split s) const { return corpus_->split_ranges(s); }

 private:
  // The shortest repeated passage (recur): L/2 bytes, at least 1.
  int64_t recur_min_len() const { return std::max<int64_t>(1, segment_len() / 2); }

  // Writes example `index` (window, curricula applied) to out.
  void fill(Split s, int64_t index, int64_t* out, std::vector<Name>* names) const;

  double valid_fraction_ = 0.1, test_fraction_ = 0.1, recur_ = 0.0, names_ = 0.0, doubled_ = 0.0;
  bool balance_ = false;
  // balance: per group of the training ranges, its name, the indices of its ranges in
  // usable_[0] and the running totals of their start positions (first entry 0).
  struct GroupStarts {
    std::string name;
    std::vector<size_t> ranges;
    std::vector<int64_t> starts{0};
  };
  std::vector<GroupStarts> groups_;
  std::shared_ptr<const TextCorpus> corpus_;
  // Per split: the ranges that hold a window, and running totals of their training start
  // positions / tiles (first entry 0).
  std::vector<TextCorpus::Range> usable_[3];
  std::vector<int64_t> starts_[3], tiles_[3];
  int64_t short_[3] = {0, 0, 0};  // ranges shorter than one window
};

}  // namespace mnemo
