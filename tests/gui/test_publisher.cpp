// One path from a step to the screen (app/view/publisher.h): for every model family the
// same weights stepped live (Worker, from a checkpoint), replayed from the session's probe
// recording (ReplayController) and exported by `mnemoscope export` give the same labels and
// rows — the model kind reaches every path (rmt-write-only's "previous write" rows, trxl-rmt's
// cache map), and replay gets the provenance a live step has.
// (tests/support/gui_test.h includes LibTorch before doctest: glog's CHECK clashes with doctest's.)
#include "tests/support/gui_test.h"  // helpers, doctest and, with the GUI, the null backend and wait_worker
#ifdef MNEMO_WITH_GUI
#include "app/figures/figures.h"
#include "app/view/publisher.h"
#include "app/gui/model/replay.h"
#include "core/io/session.h"
#include "core/train/checkpoint.h"
#include "core/train/recorder.h"
#include "core/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <dirent.h>
#include <filesystem>
#include <set>
#include <sstream>

using namespace mnemo;
using namespace mnemo::app;

namespace {

struct Recorded {
  std::string session, checkpoint, doc_path;
  Document doc;
  ModelConfig cfg;
};

// A session with one probe recording (step 0) of a tiny model of `kind`, the same weights as
// a checkpoint, and the probe document as a file.
Recorded record(const std::string& kind, const std::string& linear = "dense") {
  auto j = nlohmann::json::parse(R"({
    "model": {"model": "rmt", "slots": 3, "segment_len": 6, "dim": 16, "heads": 2, "layers": 2, "ff": 32},
    "task": {"name": "copy", "source_len": 3, "symbols": 4, "segments": 3, "train_size": 16, "valid_size": 8, "test_size": 8},
    "train": {"steps": 10, "batch": 2, "lr": 1e-2, "warmup": 1, "eval_every": 0}
  })");
  j["model"]["model"] = kind;
  if (kind == "memformer") j["model"]["dec_layers"] = 1;
  if (kind == "mtn") {
    j["model"]["n1_layers"] = 1;
    j["model"]["n2_layers"] = 1;
  }
  if (linear != "dense") {
    j["model"]["linear"] = linear;
    j["model"]["hash_bits"] = 4;
  }
  TrainingConfig cfg = TrainingConfig::from_json(j);
  Trainer t(cfg);
  Recorded r;
  const std::string dir = test::temp_dir("publisher-" + kind + "-" + linear);
  r.session = dir + "/s";
  r.checkpoint = dir + "/c.safetensors";
  r.doc_path = dir + "/probe.txt";
  r.cfg = cfg.model;
  auto s = io::Session::create(r.session, {{"kind", "train"}, {"config", cfg.to_json()}});
  r.doc = probe_document(t.task(), 8);
  record_into_session(s, t.model(), r.doc, t.task().segment_len(), 0);
  save_checkpoint(r.checkpoint, t.checkpoint());
  test::write_file(r.doc_path, std::string(r.doc.bytes));
  return r;
}


void same_values(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i])) {
      CHECK(std::isnan(b[i]));
      continue;
    }
    CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-4).scale(1.0));
  }
}

void same_attention(const AttentionData& a, const AttentionData& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.source == b.source);
  CHECK(a.row_labels == b.row_labels);
  CHECK(a.col_labels == b.col_labels);
  CHECK(a.mass_names == b.mass_names);
  REQUIRE(a.row_blocks.size() == b.row_blocks.size());
  for (size_t i = 0; i < a.row_blocks.size(); ++i) CHECK(a.row_blocks[i].name == b.row_blocks[i].name);
}

// What the panels draw of a step: labels exactly, numbers to float rounding.
void same_step(const StepData& live, const StepData& replayed) {
  CHECK(live.segment == replayed.segment);
  CHECK(live.memformer.col_labels == replayed.memformer.col_labels);
  CHECK(live.memformer.slots == replayed.memformer.slots);
  same_values(live.memformer.writer, replayed.memformer.writer);
  CHECK(live.loss_next_segment == replayed.loss_next_segment);
  CHECK(live.token_losses.first == replayed.token_losses.first);
  same_values(live.token_losses.values, replayed.token_losses.values);
  same_attention(live.attention, replayed.attention);
  REQUIRE(live.extra_attention.size() == replayed.extra_attention.size());
  for (size_t i = 0; i < live.extra_attention.size(); ++i) same_attention(live.extra_attention[i], replayed.extra_attention[i]);
  REQUIRE(live.hash.paths.size() == replayed.hash.paths.size());
  for (size_t i = 0; i < live.hash.paths.size(); ++i) CHECK(live.hash.paths[i].path == replayed.hash.paths[i].path);
  CHECK(live.mtn.present == replayed.mtn.present);
  REQUIRE(live.mtn.entries.size() == replayed.mtn.entries.size());
  for (size_t i = 0; i < live.mtn.entries.size(); ++i) CHECK(live.mtn.entries[i].source == replayed.mtn.entries[i].source);
}

std::vector<std::string> csv_files(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".csv") == 0) out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A CSV as its header line, its first column (row labels) and its numbers.
struct Csv {
  std::string header;
  std::vector<std::string> first_column;
  std::vector<std::string> cells;
};
Csv read_csv(const std::string& path) {
  Csv c;
  std::istringstream in(test::read_file(path));
  std::getline(in, c.header);
  for (std::string line; std::getline(in, line);) {
    std::istringstream row(line);
    std::string cell;
    bool first = true;
    while (std::getline(row, cell, ',')) {
      (first ? c.first_column : c.cells).push_back(cell);
      first = false;
    }
  }
  return c;
}

}  // namespace

TEST_CASE("publisher: live - replayed - exported steps of every model family agree in labels and rows") {
  const std::vector<std::pair<std::string, std::string>> families = {
      {"memformer", "dense"}, {"rmt", "dense"}, {"rmt-write-only", "dense"}, {"trxl", "dense"},
      {"trxl-rmt", "dense"},  {"transformer", "dense"}, {"mtn", "dense"}, {"rmt", "hashed"}};
  for (const auto& [kind, linear] : families) {
    CAPTURE(kind);
    CAPTURE(linear);
    const Recorded r = record(kind, linear);

    ReplayController replay(r.session);
    REQUIRE(replay.select_recording(0));
    const int64_t segments = replay.latest()->info->num_segments;
    REQUIRE(segments >= 2);

    Worker live;
    live.start(r.doc_path, r.cfg, 0, r.checkpoint);
    test::wait_worker(live, 1);
    REQUIRE(live.take_errors().empty());
    REQUIRE(live.latest()->info);
    CHECK(live.latest()->info->num_segments == segments);
    CHECK(live.latest()->info->segment_len == replay.latest()->info->segment_len);

    const std::string exported = test::temp_dir("publisher-export-" + kind + "-" + linear);
    const auto cli = test::run_cli("export --session " + r.session + " --figure maps --format csv --out " + exported + "/e");
    REQUIRE(cli.code == 0);

    for (int64_t seg = 0; seg < segments; ++seg) {
      CAPTURE(seg);
      live.jump(seg);
      test::wait_worker(live, 2 + seg);
      replay.jump(seg);
      ViewPtr a = live.latest(), b = replay.latest();
      REQUIRE(a->step);
      REQUIRE(b->step);
      same_step(*a->step, *b->step);
      // The labels that depend on the kind.
      if (kind == "rmt-write-only") {
        REQUIRE_FALSE(b->step->attention.row_blocks.empty());
        CHECK(b->step->attention.row_blocks.front().name == "previous write");
      }
      if (kind == "trxl-rmt") CHECK(a->step->extra_attention.size() == 1);
      // Replay has the provenance a live step has (the recording holds every probe segment).
      CHECK(bool(a->provenance) == bool(b->provenance));
      CHECK(a->provenance_note == b->provenance_note);
      if (a->provenance && b->provenance) {
        CHECK(a->provenance->segment == b->provenance->segment);
        same_values(a->provenance->initial, b->provenance->initial);
        same_values(a->provenance->weight, b->provenance->weight);
      }
      // export writes what the live step's figures are (the same CSVs, labels and numbers).
      const std::string live_dir = exported + "/live-" + std::to_string(seg);
      std::filesystem::create_directories(live_dir);
      FigureFormats csv;
      csv.csv = true;
      write_step_figures(*a->step, *a->info->doc, live_dir, csv);
      char sub[80];
      std::snprintf(sub, sizeof sub, "/e/maps/step-000000000/segment-%04lld", static_cast<long long>(seg));
      // The live step has the memory benefit (the worker runs each segment with the memory
      // reset and zeroed too); a probe recording does not, so export has no memory_benefit.
      auto live_files = csv_files(live_dir);
      live_files.erase(std::remove(live_files.begin(), live_files.end(), "memory_benefit.csv"), live_files.end());
      const auto export_files = csv_files(exported + sub);
      CHECK_FALSE(live_files.empty());
      CHECK(live_files == export_files);
      for (const auto& f : live_files) {
        if (std::find(export_files.begin(), export_files.end(), f) == export_files.end()) continue;
        CAPTURE(f);
        const Csv x = read_csv(live_dir + "/" + f), y = read_csv(exported + sub + "/" + f);
        CHECK(x.header == y.header);
        CHECK(x.first_column == y.first_column);
        REQUIRE(x.cells.size() == y.cells.size());
        for (size_t i = 0; i < x.cells.size(); ++i) {
          char* ex = nullptr;
          char* ey = nullptr;
          const double vx = std::strtod(x.cells[i].c_str(), &ex), vy = std::strtod(y.cells[i].c_str(), &ey);
          if (ex == x.cells[i].c_str() || *ex != '\0') {
            CHECK(x.cells[i] == y.cells[i]);  // text (a token, a slot type)
          } else if (!std::isnan(vx)) {
            CHECK(vx == doctest::Approx(vy).epsilon(1e-3).scale(1e-3));
          }
        }
      }
    }
  }
}

TEST_CASE("publisher: a view carries the shown step - its provenance and the visited records - and nothing after a reset") {
  auto cfg = test::tiny_memformer(3, 8);
  Worker w;
  w.start(std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt", cfg, 1, "");
  w.step(+1);
  w.step(+1);
  test::wait_worker(w, 3);
  ViewPtr v = w.latest();
  REQUIRE(v->step);
  CHECK(v->position == 1);
  CHECK(v->visited.size() == 2);
  REQUIRE(v->provenance);
  CHECK(v->provenance->segment == 1);
  CHECK(v->visited.at(1)->prov_top_k == 5);
  // Views share the visited records: a view published after more steps holds the same record
  // objects for the earlier segments (not copies), and the earlier view is unchanged.
  const auto rec0 = v->visited.at(0);
  w.step(+1);
  test::wait_worker(w, 4);
  ViewPtr v2 = w.latest();
  REQUIRE(v2->visited.size() == 3);
  CHECK(v2->visited.at(0) == rec0);
  CHECK(v->visited.size() == 2);
  CHECK(v->visited.count(2) == 0);
  const uint64_t id = v->info->id;
  w.reset();
  test::wait_worker(w, 5);
  ViewPtr r = w.latest();
  CHECK_FALSE(r->step);
  CHECK(r->position == -1);
  CHECK(r->visited.empty());
  CHECK_FALSE(r->provenance);
  CHECK(r->info->id == id);  // the same document and model
  CHECK(r->version > v->version);
  // Another model: a new info id; a model without a chain says why.
  w.apply_model(test::tiny_decoder("trxl", 3, 8), 1, "");
  w.step(+1);
  test::wait_worker(w, 6);
  ViewPtr t = w.latest();
  CHECK(t->info->id != id);
  CHECK_FALSE(t->provenance);
  CHECK(t->provenance_note.find("has no memory provenance") != std::string::npos);
}
#endif
