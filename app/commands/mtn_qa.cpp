// `mnemoscope mtn-qa`: a preset over `mnemoscope train` for the Memory Transformer Network
// paper's comparison (§2.2-3.2) on the synthetic long-document QA task (core/data/qa_task.h,
// task "qa"): MTN, the naive-memory and the no-memory baselines trained with the same
// config (the same data, steps and optimizer), evaluated with the paper's recall,
// false-positive rate and pseudo-F1, and with the choice accuracy (the right city has the
// largest mean P(answer) of the listed cities; chance = 1 / candidates).
//
//   mtn-qa --config sessions/mtn-qa.json --out DIR [--models mtn,mtn-naive,no-memory]
//          [--steps N] [--threads N]
//
// The config is a normal training config with a qa task (task.name may be left out); each
// model is trained as `mnemoscope train --config F --set model.model=<model> --out
// DIR/<model>`, a normal session. DIR also receives config.json (the config as run),
// curves.csv (every valid evaluation of every model), results.json (the final test
// evaluations, with and without memory), pseudo_f1 / choice_accuracy / valid_loss /
// answer_prob figures (PNG + SVG), <model>.safetensors weights (with the config), and
// example-mtn/: the trained MTN's memory figures on test example 0 after reading.
#include "app/view/publisher.h"
#include "core/io/json_file.h"
#include "core/io/read_file.h"
#include "app/commands/commands.h"
#include "app/commands/train.h"

#include "app/cli/cli.h"
#include "app/cli/flags.h"
#include "app/figures/figures.h"
#include "core/models/capabilities.h"
#include "core/data/qa_metrics.h"
#include "core/data/qa_task.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "families/mtn/core/model.h"
#include "core/io/session.h"
#include "core/platform/blas.h"
#include "core/train/checkpoint.h"
#include "core/train/run_log.h"
#include "core/train/trainer.h"
#include "viz/charts.h"
#include "viz/export.h"

#include <chrono>
#include <cmath>
#include <fstream>

namespace mnemo::app {

struct MtnQaCommand {
  CLI::App* cmd = nullptr;
  std::string config, out, models = "mtn,mtn-naive,no-memory";
  int64_t steps = 0, threads = 0;
  CLI::Option* o_steps = nullptr;
};

namespace {

viz::Rgb model_color(const std::string& model_kind) {
  const MemoryKind m = capabilities_of(model_kind).memory;
  if (m == MemoryKind::kKeptTokens) return {214, 39, 140};      // MTN: the paper's pink
  if (m == MemoryKind::kLearnedVectors) return {255, 127, 14};  // mtn-naive: orange
  return {44, 160, 44};                                         // no memory: green
}

bool is_mtn_family(const std::string& model_kind) {
  try {
    return capabilities_of(model_kind).mtn_family;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// The trained MTN on one test example: memory figures after the last reading chunk.
void example_figures(MtnImpl& model, const QaTask& task, const std::string& dir) {
  torch::NoGradGuard g;
  model.eval();
  auto ex = task.example(QaSplit::kTest, 0);
  const int64_t l = task.options().chunk_len, nd = task.options().doc_chunks;
  Document doc = make_document(qa_stream(ex, task.options()), "qa test example 0");  // padding shown as spaces
  auto batch = task.batch({ex});
  MemoryState mem = model.initial_memory(1);
  make_dirs(dir);
  FigureFormats fm;
  fm.png = fm.svg = fm.csv = true;
  for (int64_t c = 0; c <= nd; ++c) {
    const bool query = c == nd;
    const SegmentInput& in = query ? batch.query[0] : batch.reading[static_cast<size_t>(c)];
    Tracer tr(TraceSpec::all());
    auto out = model.step(in, mem, &tr);
    if (!query) mem = out.memory;
    Snapshot snap;
    snap.segment = c;
    snap.num_segments = nd + 1;
    snap.first_token = c * l;
    snap.length = in.valid[0].sum().item<int64_t>();
    snap.trace = tr.take();
    char name[48];
    std::snprintf(name, sizeof name, "/chunk-%02lld%s", static_cast<long long>(c), query ? "-query" : "");
    make_dirs(dir + name);
    if (query) {
      // The memory is fixed while reading the query: what keep_m_max would keep is dropped,
      // so only the attention and the answer probabilities are drawn.
      for (const char* k : {keys::kMtnKeptSource, keys::kMtnKeptImportance, keys::kMtnKeptIndex, keys::kMtnAge,
                            keys::kMtnImportance})
        snap.trace.tensors.erase(k);
      auto p = snap.trace.at(keys::kQaAnswerProb)[0].to(torch::kFloat32).contiguous();
      viz::BarSpec bars;
      bars.title = "P(answer) per query byte (answer bytes in pink)";
      bars.x_label = "query byte";
      bars.y_label = "P(answer)";
      bars.show_values = false;
      bars.reference_line = 0.5f;
      for (size_t j = 0; j < ex.query.size(); ++j) {
        bars.labels.push_back(viz::token_label(std::string_view(ex.query).substr(j, 1)));
        bars.values.push_back(p[static_cast<int64_t>(j)].item<float>());
        bars.colors.push_back(ex.labels[j] ? viz::Rgb{214, 39, 140} : viz::Rgb{150, 150, 150});
      }
      auto fig = viz::make_bars(bars);
      viz::write_png(fig, dir + name + "/answer_prob.png", 2.0f);
      viz::write_svg(fig, dir + name + "/answer_prob.svg");
    }
    write_step_figures(*publish_step(snap, doc, model.kind()).step, doc, dir + name, fm);
  }
  std::ofstream(dir + "/example.txt") << "document: " << ex.document << "\nquery: " << ex.query << "\nanswer: " << ex.answer
                                      << "\n";
}

}  // namespace

static CLI::App* add_mtn_qa_command(CLI::App& app, MtnQaCommand& c) {
  c.cmd = app.add_subcommand("mtn-qa", "train MTN vs naive-memory vs no-memory on synthetic long-document QA");
  c.cmd->add_option("--config", c.config, "training config JSON with a qa task (sessions/mtn-qa*.json)")->required();
  c.cmd->add_option("--out", c.out, "output directory (created): one session per model + the comparison")->required();
  c.cmd->add_option("--models", c.models, "comma list of mtn, mtn-naive, no-memory");
  c.o_steps = c.cmd->add_option("--steps", c.steps, "override train.steps");
  c.cmd->add_option("--threads", c.threads, "intra-op CPU threads (default: as --threads before the command)");
  return c.cmd;
}

// The preset: each model is a normal training session DIR/<model> (`mnemoscope train
// --config F --set model.model=<model>`), then the comparison is read back from the
// sessions' metrics logs.
static int run_mtn_qa_command(const MtnQaCommand& c, std::ostream& log) {
  // Validate everything before writing anything.
  nlohmann::json j;
  {
    std::string text;
    if (const std::string why = io::read_regular_file(c.config, &text, io::kMaxConfigBytes); !why.empty())
      throw UsageError("--config: file '" + c.config + "' " +
                       (why == io::kNoSuchFile ? std::string("cannot be opened; check the path") : why));
    try {
      j = mnemo::io::parse_json(text);
    } catch (const nlohmann::json::exception& e) {
      throw UsageError("--config: '" + c.config + "' is not valid JSON: " + e.what());
    }
  }
  if (j.is_object() && j.contains("task") && j["task"].is_object() && !j["task"].contains("name"))
    j["task"]["name"] = "qa";  // the preset's task
  if (j.is_object() && j.contains("task") && j["task"].is_object() && j["task"].value("name", "") != "qa")
    throw UsageError("--config '" + c.config + "': mtn-qa trains the qa task; task.name is '" +
                     j["task"]["name"].dump() + "'");
  auto model_kinds = split_list(c.models);
  if (model_kinds.empty()) throw UsageError("--models: no model given; use a comma list of mtn, mtn-naive, no-memory");
  for (const auto& k : model_kinds)
    if (!is_mtn_family(k))
      throw UsageError("--models: '" + k + "' is not an MTN-family model; use mtn, mtn-naive, no-memory");
  if (c.o_steps && c.o_steps->count() && c.steps < 1) throw UsageError("--steps must be >= 1");
  for (const auto& k : model_kinds) {
    nlohmann::json jk = j;
    if (jk.is_object() && jk.contains("model") && jk["model"].is_object()) jk["model"]["model"] = k;
    config_with_sets(jk, {}, "--config '" + c.config + "'");  // UsageError naming the field
  }
  if (c.threads < 0) throw UsageError("--threads must be >= 0");
  check_out_dir(c.out);
  if (c.threads > 0) platform::set_compute_threads(static_cast<int>(c.threads));
  make_out_dir(c.out);
  // The config as run, task name included, so each session's manifest names it.
  const std::string cfg_path = c.out + "/config.json";
  {
    const std::string text = j.dump(2) + "\n";
    io::write_file_atomic(cfg_path, text.data(), text.size());
  }

  std::vector<std::vector<std::string>> curve_rows;
  nlohmann::json results = nlohmann::json::object();
  std::map<std::string, viz::LineSeries> f1_series, loss_series, recall_series, fpr_series, choice_series;
  for (const auto& model_kind : model_kinds) {
    TrainOptions t;
    t.config = cfg_path;
    t.out = c.out + "/" + model_kind;
    t.sets = {"model.model=" + model_kind};
    if (c.o_steps && c.o_steps->count()) {
      t.steps = c.steps;
      t.steps_override = true;
    }
    log << "mtn-qa: " << model_kind << " -> " << t.out << "\n" << std::flush;
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = run_train(t, log);
    if (rc != 0) return rc;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    io::Session session = io::Session::open(t.out, 3, io::SessionAccess::kReadOnly);
    const RunLog rl = parse_run_log(session.read_metrics());
    auto& s_f1 = f1_series[model_kind];
    auto& s_loss = loss_series[model_kind];
    const viz::Rgb mc = model_color(model_kind);
    auto pale = [](uint8_t v) { return static_cast<uint8_t>((v + 2 * 255) / 3); };
    s_f1 = {model_kind, {}, {}, mc};
    s_loss = {model_kind, {}, {}, mc};
    recall_series[model_kind] = {model_kind + " (answer tokens)", {}, {}, mc};
    choice_series[model_kind] = {model_kind, {}, {}, mc};
    fpr_series[model_kind] = {model_kind + " (other tokens)", {}, {}, viz::Rgb{pale(mc.r), pale(mc.g), pale(mc.b)}};
    auto num = [](const nlohmann::json& r, const char* k) {
      return r.contains(k) && r[k].is_number() ? r[k].get<double>() : std::nan("");
    };
    for (const auto& r : rl.evals) {
      if (r.value("zero_memory", false) || r.value("final", false) || r.value("split", "") != "valid") continue;
      const double step = num(r, "step");
      curve_rows.push_back({model_kind, std::to_string(static_cast<int64_t>(step)), viz::csv_number(num(r, "loss")),
                            viz::csv_number(num(r, "recall")), viz::csv_number(num(r, "fpr")),
                            viz::csv_number(num(r, "pseudo_precision")), viz::csv_number(num(r, "pseudo_f1")),
                            viz::csv_number(num(r, "choice_accuracy"))});
      const auto x = static_cast<float>(step);
      s_f1.x.push_back(x);
      s_f1.y.push_back(static_cast<float>(num(r, "pseudo_f1")));
      s_loss.x.push_back(x);
      s_loss.y.push_back(static_cast<float>(num(r, "loss")));
      recall_series[model_kind].x.push_back(x);
      recall_series[model_kind].y.push_back(static_cast<float>(num(r, "recall")));
      fpr_series[model_kind].x.push_back(x);
      fpr_series[model_kind].y.push_back(static_cast<float>(num(r, "fpr")));
      choice_series[model_kind].x.push_back(x);
      choice_series[model_kind].y.push_back(static_cast<float>(num(r, "choice_accuracy")));
    }
    nlohmann::json res = {{"seconds", secs}, {"session", t.out}};
    for (const auto& r : rl.evals)
      if (r.value("final", false) && r.value("split", "") == "test")
        res[r.value("zero_memory", false) ? "test_memory_zeroed" : "test"] = r;
    results[model_kind] = res;
    // Weights only, with the config (as before the preset: DIR/<model>.safetensors).
    auto latest = session.load_latest();
    if (!latest) throw UsageError("mtn-qa: " + t.out + " has no checkpoint");
    WeightsFile wf = read_weights_file(latest->path);
    io::save_safetensors(c.out + "/" + model_kind + ".safetensors", wf.weights,
                         {{"config", wf.training_config.dump()}, {"model", wf.model_config.dump()}});
    if (capabilities_of(model_kind).memory == MemoryKind::kKeptTokens) {  // the kept tokens' figures
      TrainingConfig tc = TrainingConfig::from_json(wf.training_config);
      MemoryModel m = make_model(tc.model, tc.train.seed);
      load_weights(*m, wf.weights, latest->path);
      auto qa = std::dynamic_pointer_cast<QaTaskSource>(tc.make_task());
      m->set_task_head(qa->head());
      example_figures(*std::dynamic_pointer_cast<MtnImpl>(m), qa->qa(), c.out + "/example-mtn");
    }
  }

  viz::write_csv_table(c.out + "/curves.csv",
                       {"model", "step", "valid_loss", "recall", "fpr", "pseudo_precision", "pseudo_f1",
                        "choice_accuracy"},
                       curve_rows);
  nlohmann::json doc = {{"program", "mnemoscope mtn-qa"}, {"version", MNEMO_VERSION}, {"config", c.config},
                        {"threads", torch::get_num_threads()}, {"models", results}};
  const std::string text = doc.dump(2) + "\n";
  io::write_file_atomic(c.out + "/results.json", text.data(), text.size());
  auto lines = [&](const std::string& title, const std::string& ylabel,
                   const std::vector<std::map<std::string, viz::LineSeries>*>& sets, const std::string& base) {
    viz::LineSpec s;
    s.title = title;
    s.x_label = "training step";
    s.y_label = ylabel;
    for (auto* set : sets)
      for (const auto& k : model_kinds) s.series.push_back((*set)[k]);
    auto fig = viz::make_lines(s);
    viz::write_png(fig, c.out + "/" + base + ".png", 2.0f);
    viz::write_svg(fig, c.out + "/" + base + ".svg");
  };
  lines("Pseudo F1-score on the valid split", "pseudo F1", {&f1_series}, "pseudo_f1");
  lines("Valid loss (class-weighted NLL)", "loss", {&loss_series}, "valid_loss");
  lines("Mean P(answer): answer tokens (recall) and other tokens (fpr)", "mean P(answer)", {&recall_series, &fpr_series},
        "answer_prob");
  lines("Right candidate has the largest mean P(answer) (valid split)", "choice accuracy", {&choice_series},
        "choice_accuracy");
  log << "sessions, curves, results and figures are in " << c.out << "\n";
  return 0;
}

namespace {
class MtnQaCmd : public Command {
 public:
  CLI::App* add(CLI::App& parent) override { return add_mtn_qa_command(parent, c_); }
  int run(std::ostream& out) override { return run_mtn_qa_command(c_, out); }

 private:
  MtnQaCommand c_;
};
}  // namespace

std::unique_ptr<Command> make_mtn_qa_command() { return std::make_unique<MtnQaCmd>(); }

}  // namespace mnemo::app
