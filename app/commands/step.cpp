#include "app/view/publisher.h"
#include "app/commands/step.h"

#include "app/cli/owned_dir.h"
#include "app/commands/commands.h"
#include "app/figures/benefit.h"
#include "app/figures/figures.h"
#include "app/figures/extract.h"
#include "app/figures/hash.h"
#include "app/figures/slot_effects.h"
#include "core/engine/doc_score.h"
#include "core/models/memory_entries.h"
#include "core/data/tasks.h"
#include "core/engine/engine.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/io/session.h"
#include "core/train/checkpoint.h"
#include "core/train/zoo.h"
#include "core/platform/memory.h"
#include "core/trace/hash_stats.h"

#include <cmath>
#include <optional>
#include <cstdio>

namespace mnemo::app {

namespace {
// Whether --checkpoint was trained on a synthetic task (one with unpredictable random symbols).
bool synthetic_task(const ModelFlags& mf) {
  if (mf.checkpoint.empty()) return false;
  try {
    const WeightsFile& f = mf.checkpoint_file();
    if (!f.training_config.is_object() || !f.training_config.contains("task")) return false;
    const std::string name = f.training_config["task"].value("name", "");
    const TaskKind* kind = find_task_kind(name);
    return !name.empty() && !(kind && kind->data == TaskData::kDataSet);
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace

int run_step(const ModelFlags& given, const StepOptions& so, std::ostream& log, int64_t* last) {
  // Validate everything before writing anything.
  Document doc = load_doc_flag(so.doc);
  ModelFlags mf = given;
  mf.apply_default_text_model(log);  // no model flag: the zoo's text model, not a random one
  ModelConfig cfg = mf.resolve();
  const Stepping stepping = mf.stepping(cfg);  // as the checkpoint was trained, unless --segment-len
  if (so.by_slot && capabilities_of(cfg.model).memory == MemoryKind::kNone)
    throw UsageError("--by-slot: a " + cfg.model + " model has no memory; there are no entries to remove");
  const int64_t L = stepping.segment_len;
  FigureFormats fm = parse_formats(so.format);
  if (mf.checkpoint.empty()) fm.stamp = random_weights_stamp(cfg.model, mf.seed);  // every figure says so
  check_out_dir(so.out);
  Segmenter seg(&doc, L);
  const int64_t n = seg.num_segments();
  if (so.from < 0 || so.from >= n)
    throw UsageError("--from " + std::to_string(so.from) + " is out of range 0.." + std::to_string(n - 1) + " (the document has " +
                     std::to_string(n) + " segments of " + std::to_string(L) + " tokens)");
  const int64_t to = so.to_end ? n - 1 : so.to ? *so.to : std::min(n - 1, so.from + 3);
  if (last) *last = to;
  if (to < so.from || to >= n)
    throw UsageError("--to " + std::to_string(to) + " is out of range " + std::to_string(so.from) + ".." + std::to_string(n - 1));
  // One run writes a folder at a time: a second one (of step or the headless demo) is refused
  // before it looks at, clears or writes anything there. A folder that does not exist yet is
  // locked once made, below.
  std::unique_ptr<io::SessionWriteLock> lock;
  if (is_dir(so.out)) lock = lock_owned_dir(so.out);
  // Refuse an earlier run's files (without --force) or anything Mnemoscope did not write (with
  // it) before building anything.
  if (so.force) refuse_unowned(so.out); else prepare_out_dir(so.out, false);
  MemoryModel model = mf.build(cfg, log);
  if (doc.looks_binary()) log << "note: '" << so.doc << "' is not UTF-8 text; bytes are shown escaped\n";
  // Is the document like the model's training text (core/data/text_stats.h)? Said, never left out.
  if (!mf.checkpoint.empty() && trained_on_text(mf.checkpoint_file())) {
    std::optional<TrainingTextStats> stats;
    try {
      stats = training_text_stats_of(mf.checkpoint_file());
    } catch (const ConfigError& e) {
      log << "warning: " << e.what() << "\n";
    }
    for (const auto& w : check_document(doc, stats ? &*stats : nullptr).warnings()) log << "warning: " << w << "\n";
  }

  make_out_dir(so.out);
  if (!lock) {
    lock = lock_owned_dir(so.out);
    if (!so.force) prepare_out_dir(so.out, false);  // another run may have come and gone meanwhile
  }
  if (so.force) prepare_out_dir(so.out, true);
  // Every file is listed in the manifest before the next segment starts, so a later --force
  // removes exactly these (app/cli/owned_dir.h), even after an interrupted run.
  OwnedDirManifest manifest(so.out, {{"version", MNEMO_VERSION}, {"model", cfg.to_json()}, {"document", so.doc},
                                     {"seed", mf.seed}, {"checkpoint", mf.checkpoint}, {"segments", n},
                                     {"segment_len", L}, {"trained_segment_len", stepping.trained_len},
                                     {"from", so.from}, {"to", to}});
  manifest.save(false);
  Engine engine(model, std::move(doc), L, TraceSpec::all());
  const MemoryEntries entries = memory_entries(model->capabilities(), engine.memory_before(0), L);
  if (so.benefit) {
    if (engine.memory_before(0).empty())
      log << "note: --benefit: a " << cfg.model << " model has no memory; there is no memory benefit to show\n";
    engine.set_memory_benefit(true);
  }
  log << "stepping segments " << so.from << ".." << to << " of " << n << " (" << stepping.describe() << ")\n";
  if (!stepping.as_trained())
    log << "warning: " << stepping.warning() << "; leave out --segment-len to step it as trained\n";
  // An episode of the checkpoint's synthetic task, stepped as trained: the tokens it scores.
  std::vector<uint8_t> scored;
  if (synthetic_task(mf) && stepping.as_trained())
    scored = episode_scored_tokens(mf.checkpoint_file().training_config["task"], engine.document().size());
  if (synthetic_task(mf))
    log << "note: each loss is the mean over every token the step predicts, scored by the model's training task or "
           "not: the random symbols of a synthetic task (a copy's source, distractors) cannot be predicted, so a high "
           "loss there says nothing about the memory; "
        << (scored.empty() ? "" : "'scored' is the mean over the tokens the task scores; ")
        << "--benefit gives what the memory contributed per token\n";
  // A loss that does not measure the model is said, as the app's Controls say it: a qa
  // checkpoint (its LM head was never trained) before stepping, a loss worse than a uniform
  // guess at the first segment that has one.
  std::string trained_task;
  if (!mf.checkpoint.empty() && mf.checkpoint_file().training_config.is_object() &&
      mf.checkpoint_file().training_config.contains("task") && mf.checkpoint_file().training_config["task"].is_object())
    trained_task = mf.checkpoint_file().training_config["task"].value("name", std::string());
  if (trained_task == "qa") log << "warning: " << loss_warning(0.0, trained_task, false) << "\n";
  bool warned_loss = trained_task == "qa";
  HashStatsAccumulator hash_stats;  // bucket loads over the stepped segments ("linear": "hashed")
  platform::MemoryActivity activity("stepping '" + so.doc + "'");
  for (int64_t i = so.from; i <= to; ++i) {
    activity.rename("segment " + std::to_string(i) + " of '" + so.doc + "' (" + cfg.model + ", " +
                    std::to_string(L) + " tokens per segment)");
    SnapshotPtr snap = engine.jump(i);
    char name[32];
    std::snprintf(name, sizeof name, "/step-%04lld", static_cast<long long>(i));
    const std::string dir = so.out + name;
    // Listed as pending before it exists, so a run killed (or out of disk) inside this segment
    // leaves a folder --force may clear (app/cli/owned_dir.h).
    const bool fresh = !is_dir(dir);
    if (fresh) {
      manifest.begin_folder(name + 1);
      manifest.save(false);
    }
    make_dirs(dir);
    io::NamedTensors tensors(snap->trace.tensors.begin(), snap->trace.tensors.end());
    io::save_safetensors(dir + "/trace.safetensors", tensors,
                         {{"segment", std::to_string(i)}, {"model", cfg.to_json().dump()},
                          {"segment_len", std::to_string(L)}});
    manifest.add_written(dir + "/trace.safetensors");
    const PublishedStep pub = publish_step(*snap, engine.document(), cfg.model);
    const StepData& st = *pub.step;
    auto files = write_step_figures(st, engine.document(), dir, fm);
    std::optional<SlotEffects> slots;
    if (so.by_slot) {
      // What each entry of the memory carried into segment i did (docs/gui.md#slot-effects).
      slots = slot_effects_data(segment_entry_effects(*model, engine.document(), L, i, engine.memory_before(i),
                                                      engine.memory_before(0), entries,
                                                      {MemoryAblation::kReset, MemoryAblation::kZeroed}),
                                entries);
      write_slot_effects(*slots, engine.document(), dir + "/slot_effects", fm, files);
    }
    for (const auto& f : files) manifest.add_written(f);
    manifest.end_folder(name + 1);
    manifest.save(false);
    hash_stats.add(snap->trace);
    log << "  segment " << i;
    if (!std::isnan(snap->loss)) log << "  " << loss_label(loss_target_of(cfg.model)) << " " << snap->loss;
    if (!scored.empty() && !std::isnan(snap->loss) && !st.token_losses.empty()) {
      const ScoredLoss sl = scored_loss(st.token_losses, scored);
      if (sl.tokens > 0) log << "  scored " << sl.mean << " (" << sl.tokens << " tokens)";
      else log << "  scored: none";
    }
    if (const double sb = segment_benefit_bits(st); so.benefit && !std::isnan(sb)) {
      char b[64];
      std::snprintf(b, sizeof b, "  memory saved %+.2f bits", sb);
      log << b;
    }
    if (slots && slots->entries_removed && !slots->tokens.empty()) {
      const auto rank = slots->ranking(0);
      char b[160];
      std::snprintf(b, sizeof b, "  most helpful %s: %s (%+.2f bits; every entry at once %+.2f)",
                    slots->entry_kind.c_str(), slots->labels[static_cast<size_t>(rank[0])].c_str(),
                    slots->entry_bits(0, rank[0]), slots->all_entries_bits(0));
      log << b;
    }
    log << "  -> " << dir << " (" << files.size() + 1 << " files)\n";
    if (!warned_loss && std::isfinite(snap->loss)) {
      if (const std::string w = loss_warning(snap->loss, trained_task, mf.checkpoint.empty()); !w.empty()) {
        log << "  warning: segment " << i << ": " << w << "\n";
        warned_loss = true;
      }
    }
    if (snap->non_finite) log << "  warning: NaN/Inf in '" << snap->non_finite_key << "' at segment " << i << "\n";
  }
  if (fm.csv && !hash_stats.empty()) {
    std::vector<std::string> written;
    manifest.add("hash_stats.csv");
    manifest.save(false);
    write_hash_stats_csv(hash_data_of(hash_stats), so.out + "/hash_stats.csv", written);
    log << "hash table stats over segments " << so.from << ".." << to << " -> " << so.out << "/hash_stats.csv\n";
  }
  manifest.save(true);
  log << "figures and traces are in " << so.out << "\n";
  if (engine.document().changed_on_disk())  // a mapped document (core/data/document.h)
    log << "warning: '" << so.doc << "' changed on disk while it was being stepped; the figures may mix its old and "
        << "new bytes (bytes past a shortened end read as 0): run the command again\n";
  return 0;
}

namespace {

class StepCommand : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("step", "step a model through a document and export traces and figures");
    c->add_option("--doc", so_.doc, "document to step through (any file)")->required();
    c->add_option("--out", so_.out, "output directory (created)")->required();
    mf_.add_to(c);
    c->add_option("--from", so_.from, "first segment (default 0)");
    o_to_ = c->add_option("--to", to_, "last segment (default from+3)");
    c->add_option("--format", so_.format, "figure formats: png,svg,csv");
    c->add_flag("--benefit", so_.benefit,
                "also what the memory contributed per token: each predicted token's loss with the memory reset and "
                "zeroed (step-NNNN/memory_benefit.png/svg/csv; two more model steps per segment)");
    c->add_flag("--by-slot", so_.by_slot,
                "also what each memory entry (slot, memory token, cache block, kept entry) did for each predicted "
                "token: removed from the carried memory, reset and zeroed (step-NNNN/slot_effects.png/svg/csv; "
                "1 + 2 (entries + 1) more model steps per segment)");
    c->add_flag("--force", so_.force, "remove the files an earlier step wrote to --out first (only those its manifest.json lists; anything else there is refused)");
    return c;
  }
  int run(std::ostream& out) override {
    StepOptions so = so_;
    if (o_to_->count()) so.to = to_;
    return run_step(mf_, so, out);
  }

 private:
  ModelFlags mf_;
  StepOptions so_;
  int64_t to_ = -1;
  CLI::Option* o_to_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_step_command() { return std::make_unique<StepCommand>(); }

}  // namespace mnemo::app
