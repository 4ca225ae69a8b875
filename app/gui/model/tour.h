// Guided tours (docs/gui.md#tours): a small JSON file of stops, each naming a model (a zoo
// name or a weights file), a document, a segment, the panels to show, a selection and a
// caption. The app plays it (Tour menu, arrows / PageUp / PageDown) and `mnemoscope tour
// FILE --export DIR` writes every stop as a PNG. The file format is versioned and documented
// in docs/formats.md#tours. Torch-free header.
#pragma once
#include "app/gui/model/zoo_catalog.h"
#include "core/data/document.h"
#include "core/errors.h"
#include "core/models/config.h"
#include "core/models/stepping.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mnemo::app {

// A tour that cannot be played: names the file, the stop (1-based) and the field.
struct TourError : InputError {
  using InputError::InputError;
};

inline constexpr int kTourVersion = 1;

struct TourSelection {
  int slot = -1;        // memory entry / slot to select (-1 none)
  int64_t token = -1;   // document token to outline (-1 none)
  int head = -1;        // writer / attention head (-1 = mean over heads)
  int layer = 0;        // attention layer index (RMT family, MTN)
};

// A claim a stop's caption makes, checked against what the app shows at that stop
// (`mnemoscope tour FILE --check`, app/gui/model/tour_check.h; docs/formats.md#tours).
struct TourCheck {
  std::string kind;   // "loss" | "benefit" | "self_mass" | "slot_types" | "provenance" | "block_mass" | "reads"
                      // | "slot_effect"
  std::string says;   // the caption's words this check backs (a substring of the caption)
  double min = -1e300, max = 1e300;        // bounds on the measured value (inclusive)
  std::string stat = "each";               // "each" value within bounds, their "mean", or (provenance
                                           // of tokens, its default; slot_effect) their "sum"
  int64_t token_from = -1, token_to = -1;  // loss / benefit / provenance / slot_effect: document tokens [from, to)
  int slot = -1;                           // self_mass (-1 = every slot), provenance (required), reads,
                                           // slot_effect (required: the memory entry removed)
  std::string of;                          // provenance: "tokens" | "initial" | "other";
                                           // reads: "memory" | "top" | "entry" | "holds";
                                           // slot_effect: "reset" (default) | "zeroed", how it is removed
  int64_t token = -1;                      // reads: the document token whose memory read is measured
  std::string mass;                        // block_mass: a mass name ("reading", ...)
  int layer = -1;                          // block_mass: a layer index (-1 = every layer)
  int64_t retain = -1, mix = -1, overwrite = -1;  // slot_types: the counts (-1 = not claimed)
};

struct TourStop {
  int number = 0;                    // 1-based, as messages count
  std::string model;                 // as written in the file
  std::string checkpoint;            // the weights file it resolved to
  ModelConfig cfg;                   // the weights file's own config
  std::string document;              // resolved path
  int64_t segment = 0;
  int64_t segment_len = 0;           // tokens per segment stepped: the stop's "segment_len", else as trained
  int64_t trained_segment_len = 0;   // the checkpoint's training segment length (0 = not recorded)
  int64_t num_segments = 0;          // of the document under segment_len
  std::vector<std::string> panels;   // names from tour_panel_names(), in the file's order
  TourSelection select;
  std::string tint;                  // Document panel tint: "visited" (default), "loss", "provenance", "benefit",
                                     // "slot_effect" (the selected entry's effect, computed at the stop)
  std::string caption;               // Markdown-like (parse_caption)
  std::vector<TourCheck> checks;     // the claims its caption makes ("checks")
};

struct Tour {
  std::string path, title;
  int version = kTourVersion;
  std::vector<TourStop> stops;
};

// The numbers a caption states that need a check: decimals ("0.97", ".5") and percentages
// ("86 %"), as they appear. Every one must lie inside some check's `says`.
std::vector<std::string> caption_claim_numbers(const std::string& caption);

// The panel names a stop may list (the panels' export base names, and "controls").
const std::vector<std::string>& tour_panel_names();
// The window title of a tour panel name, as the screen shows it ("slot_types" -> "Slot types";
// tests/gui/test_tour.cpp checks them against the panel registry); empty when unknown.
std::string tour_panel_title(const std::string& name);

// The panels a caption names, as tour names: a panel's title followed by "panel" ("the Slot
// types panel", "the Document panel"), or a title of two words or "Controls" anywhere
// (case as on screen; line breaks count as spaces). A stop must show every panel its caption
// names, or the tour is refused.
std::vector<std::string> caption_named_panels(const std::string& caption);

// A "stop N" in a caption and the subject it gives for that stop: the `code` and **bold**
// spans of the clause it ends or starts (between commas, colons, semicolons, sentence ends or
// parentheses around it). Each must appear in stop N's caption, or the tour is refused: the
// reference names the wrong stop (issue: "stop 1" cited for the `Great` stop, stop 5).
struct StopReference {
  int stop = 0;
  std::string text;                  // "stop 5", as written
  std::vector<std::string> subject;  // "Great"
};
std::vector<StopReference> caption_stop_references(const std::string& caption);

// Check kinds whose value the screen shows as a percentage (the Document panel's "put 99.9 %
// of its attention on memory", the provenance's "initial memory 0.4 %"): reads of "memory",
// provenance of "initial" / "other". A check of such a value quotes it as a percentage.
bool check_shown_as_percent(const TourCheck& c);

// Reads and checks a tour: every stop's model is found (a zoo name in `zoo_dir`, or a path
// relative to the tour file or the working directory) and read, its document exists
// (default: the zoo model's own NAME.txt), its segment lies inside the document, every
// panel is known, the selection is in range. Throws TourError naming the file, the stop and
// the field (e.g. "tour t.json, stop 2, field 'segment': 40 is past the end: ...").
Tour load_tour(const std::string& path, const std::string& zoo_dir);
// The same from JSON text (path names the file in messages and anchors relative paths).
Tour parse_tour(const std::string& text, const std::string& path, const std::string& zoo_dir);

// Where a tour's names lead. parse_tour above uses the program's (tour_sources.cpp: the zoo
// directory, the weights files' configs, documents on disk); the fuzz target (fuzz/) passes
// its own, so this parser — tour.cpp, no LibTorch — runs under the sanitizers.
struct TourSources {
  std::vector<ZooModel> zoo;
  std::function<bool(const std::string&)> file_exists;                // a regular file
  std::function<ModelConfig(const std::string&)> read_model_config;   // throws naming the problem
  // The weights file's training segment length (0 = not recorded); may be empty (= 0).
  std::function<int64_t(const std::string&)> read_trained_segment_len;
  std::function<Document(const std::string&)> load_document;          // throws naming the problem
  // Folders a tour may read documents and weights files from besides its own folder (the
  // shipped assets). A shared tour file must not make the app read arbitrary files
  // ("../../../etc/shadow" rendered into a PNG by `tour --export`).
  std::vector<std::string> trusted_roots;
};
Tour parse_tour(const std::string& text, const std::string& path, const TourSources& sources);
// The tour file's text (TourError when missing, unreadable or over 4 MiB).
std::string read_tour_text(const std::string& path);

// Captions: paragraphs split by blank lines; a line starting "- " is a bullet (an indented
// line under it continues it), "# " a
// heading; **bold** and `code` spans inside a line.
struct CaptionSpan {
  std::string text;
  bool bold = false, code = false;
};
struct CaptionBlock {
  enum Kind { kParagraph, kBullet, kHeading } kind = kParagraph;
  std::vector<CaptionSpan> spans;
};
std::vector<CaptionBlock> parse_caption(const std::string& text);

// Where a tour is being played: the stop shown (-1 before the first) and what the app still
// has to do to show it. Plain C++, so the shell and tests drive it alike.
class TourPlayer {
 public:
  void start(Tour tour);
  void stop();
  bool active() const { return !tour_.stops.empty(); }
  const Tour& tour() const { return tour_; }
  int index() const { return index_; }
  const TourStop* current() const { return index_ >= 0 && index_ < count() ? &tour_.stops[index_] : nullptr; }
  int count() const { return static_cast<int>(tour_.stops.size()); }
  // Moves to stop i (clamped); returns whether the stop changed.
  bool go(int i);
  bool next() { return go(index_ + 1); }
  bool previous() { return go(index_ - 1); }
  // Bumps whenever the stop changes (so the shell applies it once).
  uint64_t version() const { return version_; }

 private:
  Tour tour_;
  int index_ = -1;
  uint64_t version_ = 0;
};

}  // namespace mnemo::app
