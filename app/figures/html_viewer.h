// The self-contained HTML viewer (docs/formats.md#html-viewer): a stepped document with its
// per-token loss and memory-benefit tints, a segment slider, and the model family's memory views
// per segment, in one file that needs no network and no Mnemoscope. The viewer itself (HTML,
// CSS and vanilla JavaScript) is one file, python/mnemoscope/viewer/viewer.html, embedded into the
// program at build time (the generated html_viewer_template.h) so the program and the Python
// package show the same viewer.
//
// The data are the app's: the StepData of every stepped segment (app/figures/extract.h via the
// publisher), each token's memory reads as the Document panel lists them (memory_reads.h) and
// what every slot held after each step (the publisher's provenance). Every number is stored as
// the app holds it (float32, no rounding); arrays go into one binary buffer, each float32 array
// byte-shuffled (its four byte planes one after the other), the buffer deflated (zlib) and
// base64-encoded; the rest is JSON.
#pragma once
#include "app/figures/memory_reads.h"
#include "app/figures/step_data.h"
#include "core/data/document.h"
#include "core/trace/provenance.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mnemo::app {

// One stepped segment: its arrays and the provenance the publisher gave with it.
struct ViewerStep {
  std::shared_ptr<const StepData> step;
  ProvenanceStatePtr provenance;         // after the step (null: the model has none)
  ProvenanceStatePtr provenance_before;  // after the previous step (what the step read)
};

struct ViewerInput {
  std::string title;        // shown in the page's title and header (the document's name)
  std::string model;        // the config's model kind ("memformer", "rmt", ...)
  std::string model_note;   // "weights from ...", "randomly initialised (seed 0)"
  std::string program_version;
  int64_t segment_len = 0, num_segments = 0;
  std::vector<ViewerStep> steps;  // ascending, consecutive segments
  // false: only the mean over heads of every attention map (about a fifth of an RMT page's size);
  // the page then has no head selector.
  bool heads = true;
  VisitedSegments visited;        // the records of every stepped segment (memory reads' holds)
};

// What one viewer file holds, before it becomes HTML: the data block (base64 of the deflated
// [u32 JSON length | JSON header | arrays], docs/formats.md#html-viewer) and its sizes.
struct ViewerData {
  std::string block;            // base64 text: nothing in it needs escaping inside a <script>
  size_t raw_bytes = 0;         // before deflating
  size_t packed_bytes = 0;      // after deflating (before base64)
};

ViewerData pack_viewer_data(const ViewerInput& in, const Document& doc);

// The viewer page with `data` inlined (the embedded template's placeholder replaced).
std::string viewer_html(const ViewerData& data, const std::string& title);

// The embedded template (for tests: it must hold exactly one data placeholder).
const std::string& viewer_template();
// Tokens of text before the first shown segment that the page holds (memory reads and slots
// point back into it).
inline constexpr int64_t kViewerContext = 4096;

inline constexpr const char* kViewerDataPlaceholder = "__MNEMOSCOPE_VIEWER_DATA__";
inline constexpr const char* kViewerTitlePlaceholder = "__MNEMOSCOPE_VIEWER_TITLE__";

// Helpers shared with the tests: base64 (RFC 4648, with padding) and zlib inflate / deflate.
std::string base64_encode(const std::string& bytes);
std::string base64_decode(const std::string& text);  // throws std::runtime_error on a bad character
std::string zlib_deflate(const std::string& bytes);
std::string zlib_inflate(const std::string& bytes);  // throws std::runtime_error on corrupt input

}  // namespace mnemo::app
