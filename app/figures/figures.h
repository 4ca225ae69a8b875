// app/figures — figures of traces and sessions, built with viz/ (no ImGui, no command line):
// one builder per figure, one file per model family (memformer, attention for the RMT /
// Transformer-XL / MTN maps, hash, mtn, session curves), all taking the one input type
// StepData (app/figures/step_data.h; app/figures/extract.h fills it from a Snapshot). The
// same builders serve `mnemoscope step`, `mnemoscope export`, the dashboard and every
// panel's Export, so a figure looks the same wherever it is made. Colours come from
// app/figures/palette.h. Writers append the paths they wrote; a failed write throws
// viz::ExportError naming the path.
#pragma once
#include "app/figures/step_data.h"
#include "core/data/document.h"
#include "viz/charts.h"
#include "viz/export.h"
#include "viz/figure.h"

#include <string>
#include <vector>

namespace mnemo::app {

struct FigureFormats {
  bool png = false, svg = false, csv = false;
  // A line written under every PNG / SVG figure when non-empty: random_weights_stamp() for a
  // model that was never trained, so no figure of one passes for a trained model's.
  std::string stamp;
  static FigureFormats all() { return {true, true, true, {}}; }
};

// "randomly initialised memformer (seed 0): not a trained model"
std::string random_weights_stamp(const std::string& model_kind, uint64_t seed);

// Label of document token `t` (bytes escaped for display); "-" outside the document.
std::string token_text(const Document& doc, int64_t t);
// A measured value in a sentence a person reads (a tour check's report, a panel's axis
// label): 4 significant digits, "nan", "inf", "-inf". A value written to a file is
// viz::csv_number's (viz/export.h), one a person may type back number_text's
// (core/io/config_fields.h): docs/architecture.md#conventions.
std::string display_number(double v);

// A step's loss as Controls shows it, in both units: "1.2345 nats/token = 1.7810 bits/byte"
// (every token is one byte of the document, so bits/byte = nats / ln 2: eval's unit).
std::string loss_units_text(double nats);
// Why a loss may not measure the model, or "" when nothing is wrong: a model trained on the qa
// task (its output is an answer probability per byte; the language-model head the app steps
// through was never trained), or a text model (task text / moby-dick) whose loss is worse
// than guessing uniformly over the 256 byte values (ln 256 = 5.5452 nats/token = 8
// bits/byte). Nothing for random weights (said elsewhere) or a synthetic task (its random
// symbols cannot be predicted; Controls and step say so).
std::string loss_warning(double nats, const std::string& trained_task, bool random_weights);

// base.png (2x) and base.svg, as chosen.
void write_figure(const viz::Figure& fig, const std::string& base, const FigureFormats& fm, std::vector<std::string>& out);
// The heatmap as write_figure, plus its matrix as base.csv when csv is chosen.
void write_heatmap(const viz::HeatmapSpec& spec, const std::string& base, const FigureFormats& fm,
                   std::vector<std::string>& out);
// A CSV table at `path` when csv is chosen.
void write_table(const std::string& path, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, const FigureFormats& fm, std::vector<std::string>& out);

// Every figure of one step into `dir` (which must exist), as `mnemoscope step` writes them:
// Memformer writer_attention_mean / _head<h>, slot_types, forgetting; the RMT / Transformer-XL
// maps rmt_attention_l<l>_<mean|head h>, rmt_block_mass, trxl_attention_l<l>_...; the MTN
// mtn_memory, mtn_document, mtn_importance, mtn_attention; hash/ for hashed projections.
// Only what the step holds is written. Returns the paths.
std::vector<std::string> write_step_figures(const StepData& st, const Document& doc, const std::string& dir,
                                            const FigureFormats& fm);

}  // namespace mnemo::app
