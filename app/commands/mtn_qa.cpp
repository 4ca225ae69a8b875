// `mnemoscope mtn-qa`: the Memory Transformer Network paper's comparison (§2.2-3.2) on the
// synthetic long-document QA task (core/data/qa_task.h): MTN, the naive-memory and the
// no-memory baselines trained with the same data, steps and optimizer, evaluated with the
// paper's recall, false-positive rate and pseudo-F1, and with the choice accuracy (the
// right city has the largest mean P(answer) of the listed cities; chance = 1 / candidates).
//
//   mtn-qa --config sessions/mtn-qa.json --out DIR [--models mtn,mtn-naive,no-memory]
//          [--steps N] [--threads N]
//
// Config JSON: {"model": ModelConfig (its "model" is replaced by each of --models),
//   "task": QaTaskOptions, "train": {"steps", "batch", "lr", "warmup", "weight_decay",
//   "clip", "eval_every", "eval_batches", "test_batches", "seed"}}; unknown keys are refused.
// DIR receives curves.csv (every evaluation), results.json (test metrics per model),
// pseudo_f1 / choice_accuracy / valid_loss / answer_prob figures (PNG + SVG), <model>.safetensors weights, and
// example-mtn/: the trained MTN's memory figures on test example 0 after reading.
#include "app/commands/commands.h"

#include "app/cli/cli.h"
#include "app/cli/flags.h"
#include "app/figures/extract.h"
#include "app/figures/figures.h"
#include "core/data/qa_metrics.h"
#include "core/data/qa_task.h"
#include "core/io/atomic_file.h"
#include "core/io/safetensors.h"
#include "core/models/factory.h"
#include "core/models/mtn.h"
#include "core/train/optim.h"
#include "viz/charts.h"
#include "viz/export.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

namespace mnemo::app {

struct MtnQaCommand {
  CLI::App* cmd = nullptr;
  std::string config, out, models = "mtn,mtn-naive,no-memory";
  int64_t steps = 0, threads = 0;
  CLI::Option* o_steps = nullptr;
};

namespace {

struct QaTrainSettings {
  int64_t steps = 1000, batch = 16, warmup = 100, eval_every = 100, eval_batches = 8, test_batches = 16;
  double lr = 5e-4, weight_decay = 0.01, clip = 1.0;
  uint64_t seed = 0;

  nlohmann::json to_json() const {
    return {{"steps", steps}, {"batch", batch}, {"lr", lr}, {"warmup", warmup}, {"weight_decay", weight_decay},
            {"clip", clip}, {"eval_every", eval_every}, {"eval_batches", eval_batches}, {"test_batches", test_batches},
            {"seed", seed}};
  }
  static QaTrainSettings from_json(const nlohmann::json& j) {
    if (!j.is_object()) throw ConfigError("'train' must be a JSON object");
    QaTrainSettings t;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      auto need_int = [&](int64_t& dst, int64_t lo) {
        if (!v.is_number_integer() || v.get<int64_t>() < lo)
          throw ConfigError("train." + k + " must be an integer >= " + std::to_string(lo) + ", got " + v.dump());
        dst = v.get<int64_t>();
      };
      auto need_num = [&](double& dst, double lo) {
        if (!v.is_number() || !(v.get<double>() >= lo))
          throw ConfigError("train." + k + " must be a number >= " + std::to_string(lo) + ", got " + v.dump());
        dst = v.get<double>();
      };
      if (k == "steps") need_int(t.steps, 1);
      else if (k == "batch") need_int(t.batch, 1);
      else if (k == "warmup") need_int(t.warmup, 0);
      else if (k == "eval_every") need_int(t.eval_every, 1);
      else if (k == "eval_batches") need_int(t.eval_batches, 1);
      else if (k == "test_batches") need_int(t.test_batches, 1);
      else if (k == "lr") need_num(t.lr, 0.0);
      else if (k == "weight_decay") need_num(t.weight_decay, 0.0);
      else if (k == "clip") need_num(t.clip, 0.0);
      else if (k == "seed") {
        if (!v.is_number_unsigned()) throw ConfigError("train.seed must be a non-negative integer, got " + v.dump());
        t.seed = v.get<uint64_t>();
      } else {
        throw ConfigError("train." + k + " is unknown; known: steps, batch, lr, warmup, weight_decay, clip, "
                          "eval_every, eval_batches, test_batches, seed");
      }
    }
    return t;
  }
};

struct EvalResult {
  double loss = 0;
  QaMetrics metrics;
  double choice_accuracy = 0;  // the right candidate has the largest mean P(answer)
};

EvalResult evaluate(MtnImpl& model, const QaTask& task, QaSplit split, int64_t batches, int64_t batch) {
  torch::NoGradGuard g;
  const bool was_training = model.is_training();
  model.eval();
  QaCounts counts;
  double loss = 0;
  int64_t n = 0, right = 0, asked = 0;
  const int64_t size = task.size(split);
  for (int64_t i = 0; i < batches; ++i) {
    const int64_t first = (i * batch) % std::max<int64_t>(1, size - batch + 1);
    if (first + batch > size) break;
    std::vector<QaExample> ex;
    for (int64_t k = 0; k < batch; ++k) ex.push_back(task.example(split, first + k));
    auto f = qa_forward(model, task.batch(ex));
    loss += f.loss.item<double>();
    counts.add(f.answer_prob, f.labels, f.valid);
    for (int64_t k = 0; k < batch; ++k) {
      right += qa_pick_candidate(f.answer_prob[k], ex[static_cast<size_t>(k)]) == ex[static_cast<size_t>(k)].answer_candidate;
      ++asked;
    }
    ++n;
  }
  model.train(was_training);
  EvalResult r;
  r.loss = n > 0 ? loss / static_cast<double>(n) : std::nan("");
  r.metrics = qa_metrics(counts);
  r.choice_accuracy = asked > 0 ? static_cast<double>(right) / static_cast<double>(asked) : std::nan("");
  return r;
}


viz::Rgb model_color(const std::string& kind) {
  if (kind == "mtn") return {214, 39, 140};         // the paper's pink
  if (kind == "mtn-naive") return {255, 127, 14};   // orange
  return {44, 160, 44};                             // green
}

// The trained MTN on one test example: memory figures after the last reading chunk.
void example_figures(MtnImpl& model, const QaTask& task, const std::string& dir) {
  torch::NoGradGuard g;
  model.eval();
  auto ex = task.example(QaSplit::kTest, 0);
  const int64_t l = task.options().chunk_len, nd = task.options().doc_chunks;
  std::string stream = ex.document;
  stream.resize(static_cast<size_t>(nd * l), ' ');  // the stream's padding shown as spaces
  stream += ex.query;
  Document doc = make_document(stream, "qa test example 0");
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
    write_step_figures(make_step_data(snap, doc), doc, dir + name, fm);
  }
  std::ofstream(dir + "/example.txt") << "document: " << ex.document << "\nquery: " << ex.query << "\nanswer: " << ex.answer
                                      << "\n";
}

}  // namespace

static CLI::App* add_mtn_qa_command(CLI::App& app, MtnQaCommand& c) {
  c.cmd = app.add_subcommand("mtn-qa", "train MTN vs naive-memory vs no-memory on synthetic long-document QA");
  c.cmd->add_option("--config", c.config, "experiment config JSON (sessions/mtn-qa*.json)")->required();
  c.cmd->add_option("--out", c.out, "output directory (created)")->required();
  c.cmd->add_option("--models", c.models, "comma list of mtn, mtn-naive, no-memory");
  c.o_steps = c.cmd->add_option("--steps", c.steps, "override train.steps");
  c.cmd->add_option("--threads", c.threads, "intra-op CPU threads (default: LibTorch's)");
  return c.cmd;
}

static int run_mtn_qa_command(const MtnQaCommand& c, std::ostream& log) {
  // Validate everything before writing anything.
  nlohmann::json j;
  {
    std::ifstream in(c.config);
    if (!in) throw UsageError("--config: file '" + c.config + "' cannot be opened; check the path");
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
      throw UsageError("--config: '" + c.config + "' is not valid JSON: " + e.what());
    }
  }
  ModelConfig mcfg;
  QaTaskOptions topt;
  QaTrainSettings ts;
  try {
    if (!j.is_object() || !j.contains("model") || !j.contains("task"))
      throw ConfigError("the config needs \"model\" and \"task\" objects (and optionally \"train\")");
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "model" && it.key() != "task" && it.key() != "train" && it.key() != "description")
        throw ConfigError("top-level key '" + it.key() + "' is unknown; known: description, model, task, train");
    mcfg = ModelConfig::from_json(j["model"]);
    topt = QaTaskOptions::from_json(j["task"]);
    if (j.contains("train")) ts = QaTrainSettings::from_json(j["train"]);
  } catch (const ConfigError& e) {
    throw UsageError("--config '" + c.config + "': " + e.what());
  }
  if (c.o_steps && c.o_steps->count()) {
    if (c.steps < 1) throw UsageError("--steps must be >= 1");
    ts.steps = c.steps;
  }
  if (mcfg.segment_len != topt.chunk_len)
    throw UsageError("--config: model.segment_len = " + std::to_string(mcfg.segment_len) +
                     " must equal task.chunk_len = " + std::to_string(topt.chunk_len));
  auto kinds = split_list(c.models);
  if (kinds.empty()) throw UsageError("--models: no model given; use a comma list of mtn, mtn-naive, no-memory");
  for (const auto& k : kinds)
    if (k != "mtn" && k != "mtn-naive" && k != "no-memory")
      throw UsageError("--models: '" + k + "' is not an MTN-family model; use mtn, mtn-naive, no-memory");
  if (c.threads < 0) throw UsageError("--threads must be >= 0");
  check_out_dir(c.out);
  if (c.threads > 0) torch::set_num_threads(static_cast<int>(c.threads));

  QaTask task(topt);
  auto [w_other, w_answer] = task.class_weights();
  make_dirs(c.out);
  log << "mtn-qa: " << kinds.size() << " models, " << ts.steps << " steps of batch " << ts.batch << ", chunks of "
      << topt.chunk_len << ", " << topt.doc_chunks << " reading chunks + 1 query chunk; class weights "
      << w_other << " / " << w_answer << " (not answer / answer)\n" << std::flush;

  std::vector<std::vector<std::string>> curve_rows;
  nlohmann::json results = nlohmann::json::object();
  std::map<std::string, viz::LineSeries> f1_series, loss_series, recall_series, fpr_series, choice_series;
  for (const auto& kind : kinds) {
    ModelConfig cfg = mcfg;
    cfg.model = kind;
    MemoryModel base;
    try {
      base = make_model(cfg, ts.seed);
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--config: ") + e.what());
    }
    auto model = std::dynamic_pointer_cast<MtnImpl>(base);
    model->set_task({MtnTask::Kind::kAnswerTagging, w_other, w_answer});
    model->train();
    auto opt = make_adamw(*model, AdamWSettings{ts.lr, ts.weight_decay});
    int64_t params = 0;
    for (const auto& p : model->parameters()) params += p.numel();
    log << kind << ": " << params << " parameters\n";
    const auto t0 = std::chrono::steady_clock::now();
    double train_loss = 0;
    int64_t train_n = 0;
    auto& s_f1 = f1_series[kind];
    auto& s_loss = loss_series[kind];
    s_f1.name = s_loss.name = kind;
    s_f1.color = s_loss.color = model_color(kind);
    recall_series[kind] = {kind + " (answer tokens)", {}, {}, model_color(kind)};
    choice_series[kind] = {kind, {}, {}, model_color(kind)};
    const viz::Rgb mc = model_color(kind);
    auto pale = [](uint8_t v) { return static_cast<uint8_t>((v + 2 * 255) / 3); };
    fpr_series[kind] = {kind + " (other tokens)", {}, {}, viz::Rgb{pale(mc.r), pale(mc.g), pale(mc.b)}};
    for (int64_t step = 0; step < ts.steps; ++step) {
      const double lr = ts.lr * std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(std::max<int64_t>(1, ts.warmup)));
      set_learning_rate(*opt, lr);
      const int64_t per_epoch = std::max<int64_t>(1, topt.train_size / ts.batch);
      auto batch = task.batch(QaSplit::kTrain, (step % per_epoch) * ts.batch, ts.batch);
      opt->zero_grad();
      auto f = qa_forward(*model, batch);
      const double lv = f.loss.item<double>();
      if (!std::isfinite(lv)) {
        log << kind << ": loss is " << lv << " at step " << step + 1 << "; stopping this model\n";
        break;
      }
      f.loss.backward();
      clip_grad_norm(*model, ts.clip);
      opt->step();
      train_loss += lv;
      ++train_n;
      if ((step + 1) % ts.eval_every == 0 || step + 1 == ts.steps) {
        auto ev = evaluate(*model, task, QaSplit::kValid, ts.eval_batches, ts.batch);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const auto& m = ev.metrics;
        char line[256];
        std::snprintf(line, sizeof line,
                      "  %-9s step %5lld  train loss %.4f  valid loss %.4f  recall %.3f  fpr %.3f  pseudo-F1 %.3f  "
                      "choice %.3f  (%.0fs)\n",
                      kind.c_str(), static_cast<long long>(step + 1), train_loss / std::max<int64_t>(1, train_n), ev.loss,
                      m.recall, m.false_positive_rate, m.pseudo_f1, ev.choice_accuracy, secs);
        log << line << std::flush;
        curve_rows.push_back({kind, std::to_string(step + 1), std::to_string(train_loss / std::max<int64_t>(1, train_n)),
                              std::to_string(ev.loss), std::to_string(m.recall), std::to_string(m.false_positive_rate),
                              std::to_string(m.pseudo_precision), std::to_string(m.pseudo_f1),
                              std::to_string(ev.choice_accuracy), std::to_string(secs)});
        const float x = static_cast<float>(step + 1);
        s_f1.x.push_back(x);
        s_f1.y.push_back(static_cast<float>(m.pseudo_f1));
        s_loss.x.push_back(x);
        s_loss.y.push_back(static_cast<float>(ev.loss));
        recall_series[kind].x.push_back(x);
        recall_series[kind].y.push_back(static_cast<float>(m.recall));
        fpr_series[kind].x.push_back(x);
        fpr_series[kind].y.push_back(static_cast<float>(m.false_positive_rate));
        choice_series[kind].x.push_back(x);
        choice_series[kind].y.push_back(static_cast<float>(ev.choice_accuracy));
        train_loss = 0;
        train_n = 0;
      }
    }
    auto test = evaluate(*model, task, QaSplit::kTest, ts.test_batches, ts.batch);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    results[kind] = {{"test_loss", test.loss},
                     {"recall", test.metrics.recall},
                     {"false_positive_rate", test.metrics.false_positive_rate},
                     {"pseudo_precision", test.metrics.pseudo_precision},
                     {"pseudo_f1", test.metrics.pseudo_f1},
                     {"choice_accuracy", test.choice_accuracy},
                     {"answer_tokens", test.metrics.answers},
                     {"other_tokens", test.metrics.others},
                     {"parameters", params},
                     {"seconds", secs}};
    char line[256];
    std::snprintf(line, sizeof line, "%s test: loss %.4f  recall %.3f  fpr %.3f  pseudo-F1 %.3f  choice %.3f\n",
                  kind.c_str(), test.loss, test.metrics.recall, test.metrics.false_positive_rate, test.metrics.pseudo_f1,
                  test.choice_accuracy);
    log << line;
    io::NamedTensors w;
    for (auto& [k, t] : named_weights(*model)) w.emplace_back(k, t);
    io::save_safetensors(c.out + "/" + kind + ".safetensors", w, {{"model", cfg.to_json().dump()}});
    if (kind == "mtn") example_figures(*model, task, c.out + "/example-mtn");
  }

  viz::write_csv_table(c.out + "/curves.csv",
                       {"model", "step", "train_loss", "valid_loss", "recall", "fpr", "pseudo_precision", "pseudo_f1",
                        "choice_accuracy", "seconds"},
                       curve_rows);
  nlohmann::json doc = {{"program", "mnemoscope mtn-qa"}, {"version", MNEMO_VERSION}, {"config", c.config},
                        {"model", mcfg.to_json()},       {"task", topt.to_json()},  {"train", ts.to_json()},
                        {"threads", torch::get_num_threads()}, {"class_weights", {w_other, w_answer}},
                        {"test", results}};
  const std::string text = doc.dump(2) + "\n";
  io::write_file_atomic(c.out + "/results.json", text.data(), text.size());
  auto lines = [&](const std::string& title, const std::string& ylabel,
                   const std::vector<std::map<std::string, viz::LineSeries>*>& sets, const std::string& base) {
    viz::LineSpec s;
    s.title = title;
    s.x_label = "training step";
    s.y_label = ylabel;
    for (auto* set : sets)
      for (const auto& k : kinds) s.series.push_back((*set)[k]);
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
  log << "curves, results and figures are in " << c.out << "\n";
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
