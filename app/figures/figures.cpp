#include "app/figures/figures.h"

#include "app/figures/attention.h"
#include "app/figures/benefit.h"
#include "app/figures/hash.h"
#include "app/figures/memformer.h"
#include "families/mtn/view/figures.h"
#include "core/trace/keys.h"
#include "families/mtn/core/keys.h"
#include "viz/export.h"

#include <cmath>
#include <cstdio>

namespace mnemo::app {

std::string token_text(const Document& doc, int64_t t) {
  if (t < 0 || t >= doc.size()) return "-";
  const auto& [b, e] = doc.offset(t);
  return viz::token_label(std::string_view(doc.bytes).substr(static_cast<size_t>(b), static_cast<size_t>(e - b)));
}

std::string display_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string loss_units_text(double nats) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.4f nats/token = %.4f bits/byte", nats, nats / std::log(2.0));
  return buf;
}

std::string loss_warning(double nats, const std::string& trained_task, bool random_weights) {
  if (trained_task == "qa")
    return "This model was trained on the qa task: it tags the answer bytes of a query (mtn-qa), and its "
           "language-model head, which this loss comes from, was never trained - the loss does not measure it. "
           "Score it on its own task (recall = mean P(answer), choice accuracy): mnemoscope eval --checkpoint FILE "
           "--split test (docs/zoo/mtn-qa.md).";
  // Against a uniform guess only where it is the yardstick: a model trained on text. A random
  // model says so elsewhere; a synthetic task's random symbols cannot be predicted at all.
  if (random_weights || (trained_task != "text" && trained_task != "moby-dick")) return "";
  const double uniform = std::log(256.0);
  if (!(nats > uniform)) return "";
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "Worse than guessing: %.4f nats/token is above a uniform guess over the 256 byte values "
                "(ln 256 = %.4f nats/token = 8 bits/byte)%s.",
                nats, uniform, ": this text is unlike the model's training text, or its output head is untrained");
  return buf;
}

std::string random_weights_stamp(const std::string& model_kind, uint64_t seed) {
  return "randomly initialised " + model_kind + " (seed " + std::to_string(seed) + "): not a trained model";
}

void write_figure(const viz::Figure& fig_in, const std::string& base, const FigureFormats& fm, std::vector<std::string>& out) {
  const viz::Figure* fig = &fig_in;
  viz::Figure stamped;
  if (!fm.stamp.empty() && (fm.png || fm.svg)) {
    // One line under the figure, in red: grown by its height, nothing else moved.
    stamped = fig_in;
    stamped.height += 18.f;
    viz::Text t;
    t.x = 6.f;
    t.y = stamped.height - 5.f;
    t.text = fm.stamp;
    t.size = 11.f;
    t.color = viz::Rgb{190, 30, 30};
    stamped.prims.push_back(t);
    fig = &stamped;
  }
  if (fm.png) {
    viz::write_png(*fig, base + ".png", 2.0f);
    out.push_back(base + ".png");
  }
  if (fm.svg) {
    viz::write_svg(*fig, base + ".svg");
    out.push_back(base + ".svg");
  }
}

void write_heatmap(const viz::HeatmapSpec& spec, const std::string& base, const FigureFormats& fm,
                   std::vector<std::string>& out) {
  if (spec.rows <= 0 || spec.cols <= 0) return;
  write_figure(viz::make_heatmap(spec), base, fm, out);
  if (fm.csv) {
    viz::write_csv_matrix(base + ".csv", spec.rows, spec.cols, spec.values, spec.row_labels, spec.col_labels);
    out.push_back(base + ".csv");
  }
}

void write_table(const std::string& path, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, const FigureFormats& fm, std::vector<std::string>& out) {
  if (!fm.csv) return;
  viz::write_csv_table(path, header, rows);
  out.push_back(path);
}

std::vector<std::string> write_step_figures(const StepData& st, const Document& doc, const std::string& dir,
                                            const FigureFormats& fm) {
  std::vector<std::string> out;
  if (st.memformer.has_writer())
    for (int h = -1; h < st.memformer.heads; ++h)
      write_writer_attention(st, h, -1, dir + "/writer_attention_" + (h < 0 ? std::string("mean") : "head" + std::to_string(h)),
                             fm, out);
  write_slot_types(st, SlotThresholds{}, dir + "/slot_types", fm, out);
  write_forgetting(st, dir + "/forgetting", fm, out);
  // What the memory contributed per token (when the step computed it: step --benefit, the app).
  write_memory_benefit(st, doc, dir + "/memory_benefit", fm, out);
  // MemoryFormer hash tables ("linear": "hashed"): loads, one table's bars, p(z), stats.
  write_hash_figures(st.hash, dir, fm, segment_title(st), out);
  // Memory Transformer Network family: kept tokens, importance, document view.
  write_mtn_memory(st, doc, dir + "/mtn_memory", dir + "/mtn_document", dir + "/mtn_importance", fm, out);
  // Attention maps with their memory blocks (RMT, Transformer-XL, MTN joint layers), block masses.
  std::vector<const AttentionData*> maps;
  if (!st.attention.empty()) maps.push_back(&st.attention);
  for (const auto& a : st.extra_attention) maps.push_back(&a);
  for (const AttentionData* a : maps) {
    const std::string stem = dir + "/" + attention_file_stem(*a);
    if (a->source == keys::kMtnJointAttnPrefix) {
      // The MTN family: the last joint layer, mean over heads (one map per step).
      write_attention_map(*a, st.segment, static_cast<int>(a->layers.size()) - 1, -1, stem, fm, out, NAN, NAN, st.train_step);
      continue;
    }
    for (size_t li = 0; li < a->layers.size(); ++li)
      for (int h = -1; h < a->heads; ++h)
        write_attention_map(*a, st.segment, static_cast<int>(li), h,
                            stem + "_l" + std::to_string(a->layers[li]) + "_" + (h < 0 ? std::string("mean") : "head" + std::to_string(h)),
                            fm, out, NAN, NAN, st.train_step);
    if (a->traced_mass) write_attention_masses(*a, st.segment, -1, dir + "/rmt_block_mass", fm, out, st.train_step);
  }
  return out;
}

}  // namespace mnemo::app
