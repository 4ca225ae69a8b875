// `mnemoscope eval` (core/train/trainer.h):
//   eval [--config F] --checkpoint CKPT [--split test] [--batches N] [--zero-memory] [--json] [--set k=v]...
//     Prints loss, per-character accuracy and exact match of a checkpoint (a training
//     checkpoint, a zoo model, or a weights-only file with --config; without --config the
//     checkpoint's own training config); --zero-memory zeroes every memory tensor between
//     segments (the ablation that shows what the memory carries).
//   eval --checkpoint CKPT --by-position [--from-position 8] [--json]
//     Both at once, split by segment index and by position within the segment.
//   eval --checkpoint CKPT --doc FILE [--from-position 8] [--json] [--csv F]
//     One document: bits per byte with the memory carried across it, reset and zeroed, over
//     all positions and over positions N.. of each segment; --csv writes each token's losses.
//   eval --checkpoint CKPT --doc FILE --by-slot [--json]
//     Also what each memory entry does: the document's bits with each entry removed from the
//     carried memory, reset and zeroed (docs/training.md#eval-by-slot).
//   eval --checkpoint CKPT --doc B --patch-from A:s --at t [--json] [--csv F]
//     B with the memory after segment s of A carried into its segment t (docs/training.md#eval-patch).
#include "app/cli/assets.h"
#include "app/cli/flags.h"
#include "app/cli/format.h"
#include "app/commands/commands.h"
#include "core/engine/doc_score.h"
#include "core/models/memory_entries.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "core/train/checkpoint.h"
#include "core/train/lm_metrics.h"
#include "core/train/run_log.h"
#include "core/train/trainer.h"
#include "core/train/zoo.h"
#include "viz/export.h"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace mnemo::app {

namespace {

struct EvalCommandOptions {
  std::string config, checkpoint, split = "test", doc, csv, patch_from;
  int64_t batches = -2;
  bool zero_memory = false, json = false, by_position = false, by_slot = false;
  int64_t from_position = 8;
  int64_t at = -1;  // --at: the segment of --doc that takes --patch-from's memory
  std::vector<std::string> sets;
};

// --by-position: the split evaluated twice, with the memory carried and zeroed, split by
// segment index and by position within the segment (core/train/metrics.h PositionLosses).
int print_by_position(const EvalCommandOptions& c, MemoryModelImpl& model, const TaskSource& task, Split split,
                      int64_t batches, int64_t batch, const WeightsFile& file, const std::string& model_kind,
                      std::ostream& out) {
  const bool has_memory = !model.initial_memory(1).empty();
  PositionLosses with, zeroed, reset;
  const ScoreTotals sw = evaluate_model(model, task, split, batches, batch, false, 0, 1, &with);
  if (has_memory) {
    evaluate_model(model, task, split, batches, batch, true, 0, 1, &zeroed);
    evaluate_model(model, task, split, batches, batch, false, 0, 1, &reset, true);
  }
  if (with.position_sum.empty())
    throw UsageError("--by-position: the model gives no per-token losses on this task (" + task.name() + ")");
  const auto from = static_cast<size_t>(c.from_position);
  if (from >= with.position_sum.size())
    throw UsageError("--from-position " + std::to_string(c.from_position) + " must be below the segment length " +
                     std::to_string(with.position_sum.size()));
  const double b = with.bits_from_position(0), bz = has_memory ? zeroed.bits_from_position(0) : b;
  const double bf = with.bits_from_position(from), bzf = has_memory ? zeroed.bits_from_position(from) : bf;
  const double br = has_memory ? reset.bits_from_position(0) : b, brf = has_memory ? reset.bits_from_position(from) : bf;
  const EvalMetrics e = eval_metrics(sw, task, file.step, split, false);
  if (c.json) {
    nlohmann::json j = {{"checkpoint", file.path}, {"model", model_kind}, {"task", task.name()},
                        {"split", split_name(split)}, {"segments", task.segments()},
                        {"segment_len", static_cast<int64_t>(with.position_sum.size())}, {"examples", e.examples},
                        {"has_memory", has_memory}, {"bits_per_token", b}, {"from_position", c.from_position},
                        {"bits_per_token_from_position", bf}};
    if (has_memory) {
      j["bits_per_token_zero_memory"] = bz;
      j["memory_gain"] = bz - b;
      j["bits_per_token_from_position_zero_memory"] = bzf;
      j["memory_gain_from_position"] = bzf - bf;
      j["bits_per_token_reset_memory"] = br;
      j["memory_gain_reset"] = br - b;
      j["bits_per_token_from_position_reset_memory"] = brf;
      j["memory_gain_reset_from_position"] = brf - bf;
    }
    auto rows = [&](bool by_segment, const char* key) {
      nlohmann::json a = nlohmann::json::array();
      const size_t n = by_segment ? with.segment_sum.size() : with.position_sum.size();
      auto bits = [&](const PositionLosses& p, size_t i) { return by_segment ? p.segment_bits(i) : p.position_bits(i); };
      for (size_t i = 0; i < n; ++i) {
        nlohmann::json r = {{key, i}, {"bits", bits(with, i)}};
        if (has_memory) {
          r["bits_zero_memory"] = bits(zeroed, i);
          r["bits_reset_memory"] = bits(reset, i);
        }
        a.push_back(r);
      }
      return a;
    };
    j["by_segment"] = rows(true, "segment");
    j["by_position"] = rows(false, "position");
    out << j.dump() << "\n";
    return 0;
  }
  char buf[256];
  out << model_kind << " on " << task.name() << ", " << split_name(split) << " split (" << e.examples << " examples, "
      << task.segments() << " segments of " << with.position_sum.size() << ")\n";
  if (has_memory) {
    std::snprintf(buf, sizeof buf,
                  "bits/token: memory %.4f; reset to the initial memory %.4f (gain %+.4f); zeroed %.4f (gain %+.4f)\n",
                  b, br, br - b, bz, bz - b);
    out << buf;
    std::snprintf(buf, sizeof buf,
                  "positions %zu..%zu of each segment: memory %.4f; reset %.4f (gain %+.4f); zeroed %.4f (gain %+.4f)\n",
                  from, with.position_sum.size() - 1, bf, brf, brf - bf, bzf, bzf - bf);
    out << buf;
  } else {
    std::snprintf(buf, sizeof buf, "bits/token %.4f (positions %zu..: %.4f); the model has no memory\n", b, from, bf);
    out << buf;
  }
  auto table = [&](bool by_segment) {
    auto bits = [&](const PositionLosses& p, size_t i) { return by_segment ? p.segment_bits(i) : p.position_bits(i); };
    const size_t n = by_segment ? with.segment_sum.size() : with.position_sum.size();
    out << (by_segment ? " segment" : "position") << (has_memory ? "  memory   reset    gain  zeroed    gain\n" : "  bits\n");
    for (size_t i = 0; i < n; ++i) {
      if (has_memory)
        std::snprintf(buf, sizeof buf, "%8zu  %6.3f  %6.3f  %+6.3f  %6.3f  %+6.3f\n", i, bits(with, i), bits(reset, i),
                      bits(reset, i) - bits(with, i), bits(zeroed, i), bits(zeroed, i) - bits(with, i));
      else
        std::snprintf(buf, sizeof buf, "%8zu  %6.3f\n", i, bits(with, i));
      out << buf;
    }
  };
  table(true);
  table(false);
  return 0;
}

// --by-slot: what each memory entry does (core/engine/doc_score.h score_document_by_entry),
// reset to the initial memory and zeroed, beside the plain scores `with`, `reset`, `zeroed`.
void print_by_slot(MemoryModelImpl& model, const Document& doc, int64_t L, const DocumentLosses& reset,
                   const DocumentLosses& zeroed, nlohmann::json* j, std::ostream& out) {
  ProgressLine progress(std::cerr, "eval --by-slot: each memory entry removed, reset and zeroed", stderr_is_terminal());
  const DocumentEntryEffects fx =
      score_document_by_entry(model, doc, L, {MemoryAblation::kReset, MemoryAblation::kZeroed},
                              [&](int64_t done, int64_t total) {
                                progress.update(done, total);
                                return true;
                              });
  progress.finish();
  const MemoryEntries& en = fx.entries;
  const int64_t n = en.count();
  const std::string kind = en.groups.empty() ? "entry" : en.groups.size() == 1 ? en.groups[0].name : "entry";
  if (j) {
    nlohmann::json& o = *j;
    o["by_slot"] = true;
    o["entry_kind"] = kind;
    o["entry_count"] = n;
    nlohmann::json segs = nlohmann::json::array();
    for (const auto& s : fx.segments) {
      nlohmann::json r = {{"segment", s.segment}, {"predicted", static_cast<int64_t>(s.tokens.size())},
                          {"entries_removed", s.segment > 0}};
      for (size_t a = 0; a < fx.ablations.size(); ++a) {
        const std::string suffix = a == 0 ? "_reset" : "_zeroed";
        nlohmann::json b = nlohmann::json::array();
        for (int64_t e = 0; e < n; ++e) b.push_back(s.bits_saved(a, e));
        r["bits_saved" + suffix] = b;
        r["all_entries_bits_saved" + suffix] = s.all_bits_saved(a);
      }
      segs.push_back(r);
    }
    o["segments_by_slot"] = segs;
    nlohmann::json entries = nlohmann::json::array();
    for (int64_t e = 0; e < n; ++e)
      entries.push_back({{"entry", e}, {"label", en.label(e)},
                         {"bits_saved_reset", fx.entry_bits_saved[0][static_cast<size_t>(e)]},
                         {"bits_saved_zeroed", fx.entry_bits_saved[1][static_cast<size_t>(e)]}});
    o["entries"] = entries;
    for (size_t a = 0; a < fx.ablations.size(); ++a) {
      const std::string suffix = a == 0 ? "_reset" : "_zeroed";
      double sum = 0;
      for (double v : fx.entry_bits_saved[a]) sum += v;
      o["ranking" + suffix] = fx.ranking(a);
      o["sum_of_entries_bits_saved" + suffix] = sum;
      o["all_entries_bits_saved" + suffix] = fx.all_bits_saved[a];
    }
    o["ablate_all_reset"] = fx.all_removed[0].bits_per_token();
    o["ablate_all_zeroed"] = fx.all_removed[1].bits_per_token();
    return;
  }
  char buf[256];
  out << "\nslot ablation: each of the " << n << " memory entries (" << kind
      << (n == 1 ? "" : "s") << ") removed from the memory carried into every segment after the first, one at a time;\n"
      << "bits saved = what the entry saved on the document (> 0: removing it makes the text harder), with the entry\n"
      << "reset to the initial memory and zeroed\n";
  std::snprintf(buf, sizeof buf, "%5s  %-34s %12s %12s\n", "rank", "entry", "reset", "zeroed");
  out << buf;
  int64_t rank = 1;
  for (int64_t e : fx.ranking(0)) {
    std::snprintf(buf, sizeof buf, "%5lld  %-34s %+12.3f %+12.3f\n", static_cast<long long>(rank++), en.label(e).c_str(),
                  fx.entry_bits_saved[0][static_cast<size_t>(e)], fx.entry_bits_saved[1][static_cast<size_t>(e)]);
    out << buf;
  }
  double sr = 0, sz = 0;
  for (double v : fx.entry_bits_saved[0]) sr += v;
  for (double v : fx.entry_bits_saved[1]) sz += v;
  std::snprintf(buf, sizeof buf, "%5s  %-34s %+12.3f %+12.3f\n", "", "sum of the single entries", sr, sz);
  out << buf;
  std::snprintf(buf, sizeof buf, "%5s  %-34s %+12.3f %+12.3f\n", "", "every entry at once", fx.all_bits_saved[0],
                fx.all_bits_saved[1]);
  out << buf;
  out << "(single-entry effects need not add up to the all-entries effect: removing entries together is not the sum of "
         "removing each)\n";
  std::snprintf(buf, sizeof buf, "every entry removed: %.4f bits/byte reset, %.4f zeroed (the reset and zeroed scores above: %.4f, %.4f)\n",
                fx.all_removed[0].bits_per_token(), fx.all_removed[1].bits_per_token(), reset.bits_per_token(),
                zeroed.bits_per_token());
  out << buf;
}

// --patch-from A:s --at t: document B scored with its own memory and with the memory after
// segment s of A carried into its segment t (core/engine/doc_score.h score_document_patched).
int print_patch(const EvalCommandOptions& c, MemoryModelImpl& model, const ModelConfig& mc, const WeightsFile& file,
                std::ostream& out) {
  const size_t colon = c.patch_from.rfind(':');
  int64_t s = -1;
  if (colon != std::string::npos && colon + 1 < c.patch_from.size()) {
    try {
      size_t used = 0;
      s = std::stoll(c.patch_from.substr(colon + 1), &used);
      if (used != c.patch_from.size() - colon - 1) s = -1;
    } catch (const std::exception&) {
      s = -1;
    }
  }
  if (colon == std::string::npos || colon == 0 || s < 0)
    throw UsageError("--patch-from '" + c.patch_from + "' must be FILE:SEGMENT, e.g. --patch-from a.txt:3 (the memory "
                     "after segment 3 of a.txt, segments counted from 0)");
  const std::string a_path = c.patch_from.substr(0, colon);
  Document a;
  try {
    a = load_document(a_path);
  } catch (const DocumentError& e) {
    throw UsageError(std::string("--patch-from: ") + e.what());
  }
  const Document b = load_doc_flag(c.doc);
  if (!model.predicts_tokens())
    throw UsageError("--doc: a " + mc.model + " model tags tokens for its task and predicts no text; score it with --split");
  if (model.initial_memory(1).empty())
    throw UsageError("--patch-from: a " + mc.model + " model has no memory; there is nothing to carry between documents");
  const Stepping stepping = choose_stepping(mc, trained_segment_len(file));
  const int64_t L = stepping.segment_len;
  const int64_t na = segment_count(a.size(), L), nb = segment_count(b.size(), L);
  if (s >= na)
    throw UsageError("--patch-from: segment " + std::to_string(s) + " is out of range 0.." + std::to_string(na - 1) +
                     " ('" + a_path + "' has " + std::to_string(na) + " segments of " + std::to_string(L) + " tokens)");
  if (c.at < 0 || c.at >= nb)
    throw UsageError("--at " + std::to_string(c.at) + " is out of range 0.." + std::to_string(nb - 1) + " ('" + c.doc +
                     "' has " + std::to_string(nb) + " segments of " + std::to_string(L) + " tokens)");
  const MemoryState patch = document_memory_after(model, a, L, s);
  const DocumentLosses with = score_document(model, b, L, MemoryAblation::kCarried);
  const DocumentLosses patched = score_document_patched(model, b, L, patch, c.at);
  const double kBits = 1.0 / std::log(2.0);
  // Bits the patch saved per segment of B (> 0: A's memory made B easier than B's own).
  std::vector<double> saved(static_cast<size_t>(nb), 0.0);
  double total = 0;
  for (size_t t = 0; t < with.loss.size(); ++t) {
    if (std::isnan(with.loss[t]) || std::isnan(patched.loss[t])) continue;
    const double d = (static_cast<double>(with.loss[t]) - static_cast<double>(patched.loss[t])) * kBits;
    // The segment whose step predicted token t (Memformer: the one before it).
    const int64_t seg = static_cast<int64_t>(t) / L - (loss_target_of(mc.model) == LossTarget::kNextSegment ? 1 : 0);
    if (seg >= 0 && seg < nb) saved[static_cast<size_t>(seg)] += d;
    total += d;
  }
  if (!c.csv.empty())
    io::write_file_atomic(c.csv, [&](std::FILE* f) {
      std::fprintf(f, "token,segment,position,byte,nats_own_memory,nats_patched,bits_saved_by_patch\n");
      for (size_t t = 0; t < with.loss.size(); ++t)
        std::fprintf(f, "%zu,%lld,%lld,%d,%s,%s,%s\n", t, static_cast<long long>(t / L), static_cast<long long>(t % L),
                     static_cast<int>(b.id(static_cast<int64_t>(t))), viz::csv_number(with.loss[t]).c_str(),
                     viz::csv_number(patched.loss[t]).c_str(),
                     viz::csv_number((with.loss[t] - patched.loss[t]) * kBits).c_str());
    });
  if (c.json) {
    nlohmann::json segs = nlohmann::json::array();
    for (int64_t i = 0; i < nb; ++i) segs.push_back({{"segment", i}, {"bits_saved_by_patch", saved[static_cast<size_t>(i)]}});
    nlohmann::json j = {{"document", c.doc}, {"bytes", b.size()}, {"checkpoint", file.path}, {"model", mc.model},
                        {"segment_len", L}, {"segments", nb}, {"patch_from", a_path}, {"patch_segment", s},
                        {"patch_from_segments", na}, {"at", c.at}, {"predicted", with.predicted},
                        {"bits_per_byte", with.bits_per_token()}, {"bits_per_byte_patched", patched.bits_per_token()},
                        {"bits_saved_by_patch", total}, {"by_segment", segs}};
    if (!c.csv.empty()) j["csv"] = c.csv;
    out << j.dump() << "\n";
    return 0;
  }
  char buf[256];
  out << "'" << c.doc << "': " << b.size() << " bytes in " << nb << " " << stepping.describe() << " (" << mc.model
      << ")\n";
  std::snprintf(buf, sizeof buf, "bits/byte with its own memory carried across it:                 %.4f\n",
                with.bits_per_token());
  out << buf;
  std::snprintf(buf, sizeof buf, "with the memory after segment %lld of '%s' carried into segment %lld: %.4f\n",
                static_cast<long long>(s), a_path.c_str(), static_cast<long long>(c.at), patched.bits_per_token());
  out << buf;
  std::snprintf(buf, sizeof buf, "the patch saved %+.3f bits over the document (> 0: the other memory made it easier)\n", total);
  out << buf;
  out << " segment  bits saved by the patch\n";
  for (int64_t i = c.at; i < nb; ++i) {
    std::snprintf(buf, sizeof buf, "%8lld  %+8.3f\n", static_cast<long long>(i), saved[static_cast<size_t>(i)]);
    out << buf;
  }
  if (!c.csv.empty()) out << "per-token losses -> " << c.csv << "\n";
  return 0;
}

// --doc: one document scored three ways (core/engine/doc_score.h).
int print_doc_score(const EvalCommandOptions& c, MemoryModelImpl& model, const ModelConfig& mc, const WeightsFile& file,
                    std::ostream& out) {
  if (!c.patch_from.empty()) return print_patch(c, model, mc, file, out);
  const Document doc = load_doc_flag(c.doc);
  // Is the document like the model's training text (core/data/text_stats.h)? Said before the
  // scores, never left out.
  // Only for a model trained on text: a synthetic task's model reads episodes, not text.
  const bool text_model = trained_on_text(file);
  std::optional<TrainingTextStats> stats;
  try {
    if (text_model) stats = training_text_stats_of(file);
  } catch (const ConfigError& e) {
    if (!c.json) out << "warning: " << e.what() << "\n";
  }
  const DocumentCheck check = check_document(doc, stats ? &*stats : nullptr);
  if (!c.json && text_model)
    for (const auto& w : check.warnings()) out << "warning: " << w << "\n";
  if (!model.predicts_tokens())
    throw UsageError("--doc: a " + mc.model + " model tags tokens for its task and predicts no text; score it with --split");
  const bool has_memory = !model.initial_memory(1).empty();
  if (c.by_slot && !has_memory)
    throw UsageError("--by-slot: a " + mc.model + " model has no memory; there are no entries to remove");
  // Cut as the model was trained (core/models/stepping.h).
  const Stepping stepping = choose_stepping(mc, trained_segment_len(file));
  const int64_t L = stepping.segment_len;
  // A large document takes minutes: each pass says how far it is on stderr (app/cli/format.h).
  auto scored = [&](MemoryAblation a, const char* what) {
    ProgressLine progress(std::cerr, std::string("eval: scoring ") + what, stderr_is_terminal());
    DocumentLosses d = score_document(model, doc, L, a, [&](int64_t done, int64_t total) {
      progress.update(done, total);
      return true;
    });
    progress.finish();
    return d;
  };
  const DocumentLosses with = scored(MemoryAblation::kCarried, "with the memory carried");
  if (with.predicted == 0)
    throw UsageError("--doc: '" + c.doc + "' is too short for the model to predict any of it (" +
                     std::to_string(doc.size()) + " bytes; a " + mc.model + " model needs more than " +
                     std::to_string(loss_target_of(mc.model) == LossTarget::kNextSegment ? L : 1) + ")");
  DocumentLosses reset, zeroed;
  if (has_memory) {
    reset = scored(MemoryAblation::kReset, "with the memory reset at every segment");
    zeroed = scored(MemoryAblation::kZeroed, "with the memory zeroed at every segment");
  }
  const int64_t segments = segment_count(doc.size(), L);
  const double b = with.bits_per_token();
  // Bits per byte over the tokens at positions from.. of their segment (NaN where none is).
  const int64_t from = c.from_position;
  auto from_position = [&](const DocumentLosses& d) {
    double sum = 0;
    int64_t n = 0;
    for (size_t t = 0; t < d.loss.size(); ++t)
      if (static_cast<int64_t>(t) % L >= from && !std::isnan(d.loss[t])) {
        sum += d.loss[t];
        ++n;
      }
    return n == 0 ? std::nan("") : sum / static_cast<double>(n) / std::log(2.0);
  };
  const double bf = from_position(with), brf = has_memory ? from_position(reset) : std::nan(""),
               bzf = has_memory ? from_position(zeroed) : std::nan("");
  if (!c.csv.empty()) {
    // One row per document token: its place, its byte and its loss three ways (nats), and the
    // bits the memory saved on it against each ablation.
    const double kBits = 1.0 / std::log(2.0);
    io::write_file_atomic(c.csv, [&](std::FILE* f) {
      std::fprintf(f, "token,segment,position,byte,nats_memory,nats_reset,nats_zeroed,bits_saved_reset,bits_saved_zeroed\n");
      for (size_t t = 0; t < with.loss.size(); ++t) {
        const float w = with.loss[t];
        const float r = has_memory ? reset.loss[t] : std::nanf(""), z = has_memory ? zeroed.loss[t] : std::nanf("");
        std::fprintf(f, "%zu,%lld,%lld,%d,%s,%s,%s,%s,%s\n", t, static_cast<long long>(t / L),
                     static_cast<long long>(t % L), static_cast<int>(doc.id(static_cast<int64_t>(t))),
                     viz::csv_number(w).c_str(), viz::csv_number(r).c_str(), viz::csv_number(z).c_str(),
                     viz::csv_number((r - w) * kBits).c_str(), viz::csv_number((z - w) * kBits).c_str());
      }
    });
  }
  if (c.json) {
    nlohmann::json j = {{"document", c.doc},         {"bytes", doc.size()},         {"checkpoint", file.path},
                        {"model", mc.model},         {"segment_len", L},          {"segments", segments},
                        {"trained_segment_len", stepping.trained_len},
                        {"predicted", with.predicted}, {"has_memory", has_memory},  {"bits_per_byte", b}};
    auto number = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
    j["from_position"] = from;
    j["bits_per_byte_from_position"] = number(bf);
    if (has_memory) {
      j["bits_per_byte_reset_memory"] = reset.bits_per_token();
      j["bits_per_byte_zero_memory"] = zeroed.bits_per_token();
      j["memory_gain_reset"] = reset.bits_per_token() - b;
      j["memory_gain"] = zeroed.bits_per_token() - b;
      j["bits_per_byte_from_position_reset_memory"] = number(brf);
      j["bits_per_byte_from_position_zero_memory"] = number(bzf);
      j["memory_gain_reset_from_position"] = number(brf - bf);
      j["memory_gain_from_position"] = number(bzf - bf);
    }
    if (!c.csv.empty()) j["csv"] = c.csv;
    if (text_model) j["document_check"] = check.to_json();
    if (c.by_slot) print_by_slot(model, doc, L, reset, zeroed, &j, out);
    out << j.dump() << "\n";
    return 0;
  }
  char buf[256];
  out << "'" << c.doc << "': " << doc.size() << " bytes in " << segments << " " << stepping.describe() << " ("
      << mc.model << ", " << with.predicted << " bytes predicted)\n";
  std::snprintf(buf, sizeof buf, "bits/byte with the memory carried across the document: %.4f\n", b);
  out << buf;
  if (has_memory) {
    std::snprintf(buf, sizeof buf, "memory reset to the initial memory at every segment:  %.4f (the memory saves %+.4f)\n",
                  reset.bits_per_token(), reset.bits_per_token() - b);
    out << buf;
    std::snprintf(buf, sizeof buf, "memory zeroed at every segment:                       %.4f (the memory saves %+.4f)\n",
                  zeroed.bits_per_token(), zeroed.bits_per_token() - b);
    out << buf;
    if (!std::isnan(bf)) {
      std::snprintf(buf, sizeof buf, "positions %lld..%lld of each segment: memory %.4f; reset %.4f (saves %+.4f); zeroed %.4f (saves %+.4f)\n",
                    static_cast<long long>(from), static_cast<long long>(L - 1), bf, brf, brf - bf,
                    bzf, bzf - bf);
      out << buf;
    }
  } else {
    out << "the model has no memory: nothing crosses segments\n";
  }
  if (!c.csv.empty()) out << "per-token losses -> " << c.csv << "\n";
  if (c.by_slot) print_by_slot(model, doc, L, reset, zeroed, nullptr, out);
  return 0;
}

int run_eval(const EvalCommandOptions& opts, std::ostream& out) {
  EvalCommandOptions c = opts;
  if (c.checkpoint.empty()) {
    // `eval --doc FILE` alone scores the document with the zoo's text model.
    if (c.doc.empty() || !c.config.empty())
      throw UsageError("--checkpoint is required (a training checkpoint, a session folder or a zoo model)");
    c.checkpoint = find_text_model();
    if (c.checkpoint.empty())
      throw UsageError("--doc without --checkpoint scores with the zoo's text model, which is not here (assets/models/" +
                       std::string(kTextModel) + ".safetensors); pass --checkpoint");
    if (!c.json) out << "model: the zoo's text model " << kTextModel << " (docs/zoo/" << kTextModel << ".md)\n";
  }
  WeightsFile file;
  try {
    file = read_weights_file(c.checkpoint);
  } catch (const Error& e) {
    throw UsageError(std::string("--checkpoint: ") + e.what());
  }
  // Without --config the checkpoint's own training config (curriculum segments included). A
  // document needs the model alone: a weights file with only its model config (export-weights,
  // the Python package's save_weights and SessionWriter checkpoints) scores one.
  if (!c.csv.empty() && c.doc.empty()) throw UsageError("--csv writes the per-token losses of --doc FILE; add --doc");
  if (c.from_position < 0) throw UsageError("--from-position must be >= 0");
  if (c.by_slot && c.doc.empty())
    throw UsageError("--by-slot scores what each memory entry does on one document; add --doc FILE");
  if (!c.patch_from.empty() && c.doc.empty())
    throw UsageError("--patch-from carries another document's memory into --doc FILE; add --doc FILE");
  if (c.at >= 0 && c.patch_from.empty())
    throw UsageError("--at names the segment of --doc that starts from another document's memory; add --patch-from "
                     "FILE:SEGMENT");
  if (!c.patch_from.empty() && c.at < 0)
    throw UsageError("--patch-from needs --at SEGMENT: the segment of --doc that starts from the memory of '" +
                     c.patch_from + "'");
  if (!c.patch_from.empty() && c.by_slot)
    throw UsageError("--by-slot and --patch-from are two different runs; leave one out");
  if (!c.doc.empty() && (c.by_position || c.zero_memory || c.split != "test" || c.batches != -2))
    throw UsageError("--doc scores one document with the memory carried, reset and zeroed; leave out --split, "
                     "--batches, --zero-memory and --by-position");
  if (c.config.empty() && file.training_config.is_null() && !c.doc.empty() && file.has_model_config()) {
    if (!c.sets.empty())
      throw UsageError("--set changes a training config, and --checkpoint '" + c.checkpoint +
                       "' has only its model config; pass --config with the config to change");
    ModelConfig mc;
    try {
      mc = ModelConfig::from_json(file.model_config);
    } catch (const ConfigError& e) {
      throw UsageError("--checkpoint '" + c.checkpoint + "' model config: " + e.what());
    }
    MemoryModel model = make_model(mc, 0);
    try {
      load_weights_checked(*model, mc, file, "its own model config");
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--checkpoint: ") + e.what());
    }
    return print_doc_score(c, *model, mc, file, out);
  }
  if (c.config.empty() && file.training_config.is_null())
    throw UsageError("--checkpoint '" + c.checkpoint + "' names no training config (a " + file.kind +
                     (file.has_model_config() ? ", with only its model config" : "") +
                     "); pass --config with the config it was trained with" +
                     (file.has_model_config() ? ", or score a document with --doc FILE" : ""));
  TrainingConfig cfg = c.config.empty()
                           ? config_with_sets(file.training_config, c.sets, "--checkpoint '" + c.checkpoint + "' config")
                           : load_training_config(c.config, c.sets);
  Split split;
  try {
    split = parse_split(c.split, "--split");
  } catch (const ConfigError& e) {
    throw UsageError(e.what());
  }
  if (c.batches == 0 || c.batches < -2) throw UsageError("--batches must be >= 1, or -1 for the whole split");
  MemoryModel model;
  try {
    model = make_model(cfg.model, cfg.train.seed);
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
  // With no --config, a mismatch comes from --set flags on model fields: the advice names them.
  std::string model_sets;
  if (c.config.empty())
    for (const auto& s : c.sets)
      if (s.rfind("model.", 0) == 0) model_sets += (model_sets.empty() ? "--set " : ", --set ") + s;
  try {
    load_weights_checked(*model, cfg.model, file, c.config.empty() ? "the --set flags" : c.config,
                         model_sets.empty() ? std::string()
                                            : "Leave out " + model_sets + " (the file's own model config is used)");
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--checkpoint: ") + e.what());
  }
  if (!c.doc.empty()) return print_doc_score(c, *model, cfg.model, file, out);
  auto task = cfg.make_task();
  try {
    model->set_task_head(task->head());  // e.g. the qa task: MTN answer tagging
  } catch (const ConfigError& e) {
    throw UsageError(std::string("--config: ") + e.what());
  }
  const int64_t batches = c.batches == -2 ? cfg.train.eval_batches : c.batches;
  if (c.by_position) {
    if (c.zero_memory) throw UsageError("--by-position evaluates with the memory and zeroed; leave out --zero-memory");
    if (c.from_position < 0) throw UsageError("--from-position must be >= 0");
    return print_by_position(c, *model, *task, split, batches, cfg.train.batch, file, cfg.model.model, out);
  }
  ScoreTotals s = evaluate_model(*model, *task, split, batches, cfg.train.batch, c.zero_memory);
  const EvalMetrics e = eval_metrics(s, *task, file.step, split, c.zero_memory);
  if (c.json) {
    auto j = eval_record(e);
    j["checkpoint"] = file.path;  // the file evaluated (a session directory resolves to its latest)
    j["model"] = cfg.model.model;
    j["task"] = task->name();
    j["segments"] = task->segments();
    j["zero_memory"] = c.zero_memory;
    out << j.dump() << "\n";
  } else {
    out << cfg.model.model << " on " << task->name() << " (" << task->segments() << " segments)"
        << (c.zero_memory ? ", memory zeroed between segments" : "") << "\n"
        << eval_line(e) << "\n";
  }
  return 0;
}

class EvalCommand : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("eval", "evaluate a checkpoint on a task split");
    c->add_option("--config", o_.config,
                  "training config JSON the checkpoint was made with (default: the checkpoint's own)");
    c->add_option("--checkpoint", o_.checkpoint,
                  "checkpoint (.safetensors) from train, a session folder or a zoo model; with --doc and no "
                  "--checkpoint: the zoo's text model");
    c->add_option("--split", o_.split, "train | valid | test (default test)");
    c->add_option("--batches", o_.batches, "batches of train.batch examples (default train.eval_batches; -1 = all)");
    c->add_flag("--zero-memory", o_.zero_memory, "ablation: zero the memory between segments");
    c->add_flag("--json", o_.json, "print one JSON object");
    c->add_option("--doc", o_.doc,
                  "score this document (any text file) instead of a split: bits per byte with the memory carried "
                  "across it, reset and zeroed at every segment");
    c->add_flag("--by-position", o_.by_position,
                "bits per token by segment and by position within the segment, with the memory and zeroed");
    c->add_option("--from-position", o_.from_position,
                  "with --by-position or --doc: also the gain over positions N.. of each segment (default 8), "
                  "where a memory that only bridges the segment boundary no longer helps");
    c->add_option("--csv", o_.csv,
                  "with --doc: write each token's loss with the memory, reset and zeroed (nats) and the bits "
                  "the memory saved on it to this CSV file");
    c->add_flag("--by-slot", o_.by_slot,
                "with --doc: also what each memory entry (slot, memory token, cache block, kept entry) saves on "
                "the document, removed one at a time from the carried memory (reset and zeroed)");
    c->add_option("--patch-from", o_.patch_from,
                  "FILE:SEGMENT: with --doc and --at, carry the memory after that segment of FILE into --doc");
    c->add_option("--at", o_.at, "with --patch-from: the segment of --doc (from 0) that starts from that memory");
    c->add_option("--set", o_.sets, "override a config field: --set task.segments=4 (repeatable)");
    return c;
  }
  int run(std::ostream& out) override { return run_eval(o_, out); }

 private:
  EvalCommandOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_eval_command() { return std::make_unique<EvalCommand>(); }

}  // namespace mnemo::app
