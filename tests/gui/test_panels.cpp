// The Attention (RMT / Transformer-XL / MTN), Hash buckets and MTN memory panels without a
// window: real traces of small models through the worker's trace spec and make_step_data,
// drawn for 100 frames by the Shell with a null backend (IM_ASSERT routed to a failing
// handler), selectors clamped, empty / absent traces, and exports written through the viz code.
// (LibTorch and core headers before doctest: glog's CHECK clashes with doctest's.)
#ifdef MNEMO_WITH_GUI
#include "app/cli/cli.h"
#include "app/gui/shell/export.h"
#include "app/gui/shell/layout.h"
#include "app/gui/shell/shell.h"
#include "app/gui/model/worker.h"
#include "app/figures/extract.h"
#include "core/engine/engine.h"
#include "core/models/factory.h"
#endif
#include "tests/support/helpers.h"
#include "tests/support/skip.h"
#ifdef MNEMO_WITH_GUI
#include "tests/support/null_imgui.h"
#include "tests/support/panel_harness.h"
#endif

#include <doctest/doctest.h>

#ifdef MNEMO_WITH_GUI
#include "viz/colormap.h"
#include "viz/export.h"
#include "app/gui/panels/widgets/assert.h"
#include "app/gui/panels/widgets/fonts.h"

#include <imgui.h>
#include <algorithm>
#include <sys/stat.h>

#include <stdexcept>

using namespace mnemo;
using namespace mnemo::app;

namespace {



ModelConfig tiny(const std::string& model, const std::string& linear = "dense") {
  ModelConfig c;
  c.model = model;
  c.slots = 3;
  c.segment_len = 8;
  c.dim = 16;
  c.heads = 2;
  c.layers = 2;
  c.ff = 32;
  c.n1_layers = 1;
  c.n2_layers = 2;
  c.linear = linear;
  c.hash_bits = 4;
  c.validate();
  return c;
}

// A view as the worker publishes it, after `steps` steps of a small model on the sample document.
ViewPtr stepped_view(const ModelConfig& cfg, int steps) {
  auto doc = std::make_shared<const Document>(load_document(std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt"));
  Engine engine(make_model(cfg, 1), *doc, cfg.segment_len, TraceSpec::of(gui_trace_keys()));
  auto info = std::make_shared<ViewSource>();
  info->id = 1;
  info->doc = doc;
  info->cfg = cfg;
  info->segment_len = cfg.segment_len;
  info->num_segments = engine.num_segments();
  info->line_starts = line_starts_of(*doc);
  auto v = std::make_shared<PublishedView>();
  v->info = info;
  for (int i = 0; i < steps; ++i) {
    auto snap = engine.jump(i);
    auto data = std::make_shared<StepData>(make_step_data(*snap, *doc, cfg.model));
    v->visited.set(i, std::make_shared<SegmentRecord>(segment_record_of(*data, nullptr)));
    v->step = data;
  }
  v->position = steps - 1;
  v->version = 1;
  v->model_note = cfg.model + " (test)";
  return v;
}

// 100 frames with the mouse sweeping the display, selectors pushed out of range on the way.
void draw_frames(const ViewPtr& s, const ViewPtr& other) {
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1920.f, 1080.f);
    {
      Shell shell(&textures, ui.fonts, nullptr, nullptr);
      for (int f = 0; f < 100; ++f) {
        ImGuiIO& io = ImGui::GetIO();
        io.MousePos = ImVec2(static_cast<float>((f * 197) % 1920), static_cast<float>(30 + (f * 131) % 1040));
        io.MouseDown[0] = f % 7 == 3;  // clicks on whatever is under the pointer
        if (f == 20) {
          shell.attention().select(99, 99);
          shell.hash_buckets().select(99, 99, 99);
        }
        if (f == 30) {
          shell.attention().select(-5, -5);
          shell.hash_buckets().select(-3, -3, -3);
        }
        if (f == 40) shell.attention().select(1, 1);
        if (f == 60) io.DisplaySize = ImVec2(1280.f, 720.f);
        if (f == 95) shell.request_export(PanelId::kAttention);
        ui.frame(shell, f >= 50 && f < 53 ? other : s, control);
        const auto& st = (f >= 50 && f < 53 ? other : s)->step;
        if (f == 21 || f == 31) {
          // Selectors clamp to what the step has.
          if (st && !st->attention.empty()) {
            CHECK(shell.attention().layer_index() >= 0);
            CHECK(shell.attention().layer_index() < static_cast<int>(st->attention.layers.size()));
            CHECK(shell.attention().head() >= -1);
            CHECK(shell.attention().head() < st->attention.heads);
          }
          if (st && !st->hash.empty()) {
            CHECK(shell.hash_buckets().table() >= 0);
            bool known = false;
            for (const auto& p : st->hash.paths) {
              if (p.path != shell.hash_buckets().path()) continue;
              known = true;
              CHECK(shell.hash_buckets().table() < p.tables);
            }
            CHECK(known);
          }
        }
      }
      CHECK(shell.has_popup());  // the export dialog
    }
    CHECK(textures.live() == 0);
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

}  // namespace

TEST_CASE("gui panels: split_hash_path separates the layer from the projection") {
  CHECK(split_hash_path("layers.0.attn.q") == std::make_pair(std::string("layers.0"), std::string("attn.q")));
  CHECK(split_hash_path("joint_layers.12.ffn.fc1") == std::make_pair(std::string("joint_layers.12"), std::string("ffn.fc1")));
  CHECK(split_hash_path("writer.k") == std::make_pair(std::string("writer.k"), std::string("")));
  CHECK(split_hash_path("blocks.3") == std::make_pair(std::string("blocks.3"), std::string("")));
}

TEST_CASE("gui panels: rmt, trxl and transformer steps carry their attention maps and masses") {
  {
    auto s = stepped_view(tiny("rmt"), 2);
    const AttentionData& a = s->step->attention;
    REQUIRE_FALSE(a.empty());
    CHECK(a.kind == "RMT");
    CHECK(a.layers == std::vector<int>{0, 1});
    CHECK(a.heads == 2);
    CHECK(a.rows == 3 + 8 + 3);
    CHECK(a.cols == a.rows);
    REQUIRE(a.col_blocks.size() == 3);
    CHECK(a.col_blocks[0].name == "read");
    CHECK(a.col_blocks[2].first == 11);
    CHECK(a.row_labels[0] == "r0");
    CHECK(a.row_labels[13] == "w2");
    CHECK(a.row_token[3] == s->step->first_token);
    CHECK(a.traced_mass);
    CHECK(a.mass_names == std::vector<std::string>{"reading", "writing", "rewriting"});
    // Every row of a softmax sums to 1 (write rows see all; read rows see the read block).
    const float* m = a.map(1, 0);
    REQUIRE(m);
    for (int r = 0; r < a.rows; ++r) {
      double sum = 0;
      for (int c = 0; c < a.cols; ++c) sum += m[r * a.cols + c];
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-4));
    }
    // The traced reading mass is the tokens' mean mass on the read block.
    double reading = 0;
    const float* mean = a.map(0, -1);
    for (int r = 3; r < 11; ++r)
      for (int c = 0; c < 3; ++c) reading += mean[r * a.cols + c];
    CHECK(a.mass_at(0, -1, 0) == doctest::Approx(reading / 8).epsilon(1e-4));
    CHECK(std::isnan(a.mass_at(0, -1, 7)));
    CHECK(a.map(5, 0) == nullptr);
    CHECK(s->step->hash.empty());
    CHECK_FALSE(s->step->mtn.present);
    CHECK_FALSE(s->step->memformer.has_writer());
  }
  {
    auto s = stepped_view(tiny("trxl"), 2);
    const AttentionData& a = s->step->attention;
    REQUIRE_FALSE(a.empty());
    CHECK(a.kind == "Transformer-XL");
    CHECK(a.rows == 8);
    CHECK(a.cols == 3 + 8);
    REQUIRE(a.col_blocks.size() == 2);
    CHECK(a.col_blocks[0].name == "cache");
    CHECK(a.col_token[0] == s->step->first_token - 3);
    CHECK(a.mass_names == std::vector<std::string>{"cache", "tokens"});
    CHECK(a.mass_at(0, -1, 0) + a.mass_at(0, -1, 1) == doctest::Approx(1.0).epsilon(1e-4));
  }
  {
    auto s = stepped_view(tiny("transformer"), 1);
    const AttentionData& a = s->step->attention;
    REQUIRE_FALSE(a.empty());
    CHECK(a.kind == "Transformer");
    CHECK(a.cols == 8);
    CHECK(a.mass_names.empty());
  }
}

TEST_CASE("gui panels: hashed projections and the MTN memory reach StepData") {
  auto s = stepped_view(tiny("rmt", "hashed"), 2);
  const HashData& h = s->step->hash;
  REQUIRE_FALSE(h.empty());
  CHECK_FALSE(h.groups.empty());
  for (const auto& p : h.paths) {
    CAPTURE(p.path);
    CHECK(p.tables > 0);
    CHECK(p.buckets > 1);
    CHECK(p.counts.size() == static_cast<size_t>(p.tables) * static_cast<size_t>(p.buckets));
    CHECK(p.entropy.size() == static_cast<size_t>(p.tables));
    CHECK(p.mean_entropy >= 0.0);
    CHECK(p.mean_entropy <= 1.0 + 1e-9);
    CHECK(p.p_hist.size() == static_cast<size_t>(HashPathData::kPBins));
    double n = 0;
    for (float v : p.p_hist) n += v;
    CHECK(n == doctest::Approx(static_cast<double>(p.p_count)));
    // Loads are counts over the table's mean.
    double row = 0;
    for (int b = 0; b < p.buckets; ++b) row += p.load[static_cast<size_t>(b)];
    CHECK(row == doctest::Approx(static_cast<double>(p.buckets)).epsilon(1e-4));
  }

  auto m = stepped_view(tiny("mtn"), 3);
  const MtnData& d = m->step->mtn;
  REQUIRE(d.present);
  CHECK(d.entries.size() == 3u);
  CHECK(d.kept == 3);
  for (const auto& e : d.entries) {
    CHECK(e.source >= 0);
    CHECK(e.source < m->step->first_token + m->step->length);
    CHECK(e.age >= 0);
    CHECK(e.age <= 2);
  }
  CHECK(d.entries[0].importance >= d.entries[1].importance);  // memory order = decreasing importance
  CHECK(d.cand_source.size() == 3u + 8u);  // the previous memory (3 kept) and the chunk's 8 tokens
  CHECK(d.n_mem_candidates == 3);
  int kept = 0;
  for (auto k : d.cand_kept) kept += k;
  CHECK(kept == 3);
  CHECK(d.view_first <= d.entries[2].source);
  CHECK(d.view_end == m->step->first_token + m->step->length);
  for (const auto& e : d.entries) CHECK(d.entry_of[static_cast<size_t>(e.source - d.view_first)] >= 0);
  CHECK(m->step->attention.kind == "MTN");
  CHECK(m->step->attention.row_blocks.size() == 3);

  auto naive = stepped_view(tiny("mtn-naive"), 2);
  CHECK_FALSE(naive->step->mtn.present);
  CHECK(naive->step->attention.kind == "MTN naive memory");
  auto none = stepped_view(tiny("no-memory"), 2);
  CHECK(none->step->attention.kind == "MTN no memory");
  CHECK(none->step->attention.mass_names.empty());
}

TEST_CASE("gui panels: which panels apply to which model") {
  auto view = [](const std::string& model, const std::string& linear) {
    auto v = std::make_shared<PublishedView>();
    auto info = std::make_shared<ViewSource>();
    info->cfg.model = model;
    info->cfg.linear = linear;
    v->info = info;
    return v;
  };
  std::string why;
  CHECK(panel_applies(PanelId::kWriterAttention, *view("memformer", "dense")));
  CHECK_FALSE(panel_applies(PanelId::kWriterAttention, *view("rmt", "dense"), &why));
  CHECK(why.find("memformer") != std::string::npos);
  CHECK(panel_applies(PanelId::kAttention, *view("trxl", "dense")));
  CHECK_FALSE(panel_applies(PanelId::kAttention, *view("memformer", "dense")));
  CHECK(panel_applies(PanelId::kHashBuckets, *view("memformer", "hashed")));
  CHECK_FALSE(panel_applies(PanelId::kHashBuckets, *view("rmt", "dense"), &why));
  CHECK(why.find("--linear hashed") != std::string::npos);
  CHECK(panel_applies(PanelId::kMtnMemory, *view("mtn", "dense")));
  CHECK_FALSE(panel_applies(PanelId::kMtnMemory, *view("mtn-naive", "dense")));
  CHECK(panel_applies(PanelId::kDocument, *view("mtn-naive", "dense")));
  PublishedView empty;
  CHECK(panel_applies(PanelId::kWriterAttention, empty));
  CHECK_FALSE(panel_applies(PanelId::kAttention, empty));

  // The layouts of each model tile the work area without overlaps.
  for (auto [model, linear] : {std::pair<std::string, std::string>{"rmt", "dense"}, {"rmt", "hashed"}, {"mtn", "dense"},
                               {"mtn", "hashed"}, {"memformer", "hashed"}}) {
    CAPTURE(model);
    CAPTURE(linear);
    auto v = view(model, linear);
    const LayoutHint hint = layout_hint(*v);
    const ImVec2 wp(0, 22), ws(1920, 1058);
    float area = 0;
    for (int i = 0; i < panel_count(); ++i) {
      const PanelId id = static_cast<PanelId>(i);
      // Panels closed at start (Gallery, Dashboard, Slot effects) float over the layout.
      if (!panel_def(id).open_by_default || !panel_applies(id, *v)) continue;
      PanelRect r = default_panel_rect(id, wp, ws, hint);
      CHECK(r.pos.x >= 0);
      CHECK(r.pos.x + r.size.x <= 1920.5f);
      CHECK(r.pos.y + r.size.y <= 1080.5f);
      CHECK(r.size.x >= 300.f);
      area += r.size.x * r.size.y;
    }
    CHECK(area == doctest::Approx(ws.x * ws.y).epsilon(0.01));
  }
}

TEST_CASE("gui panels: attention, hash and MTN panels draw 100 frames on real traces") {
  struct Case {
    const char* model;
    const char* linear;
    int steps;
  };
  const Case cases[] = {{"rmt", "dense", 2},         {"trxl", "dense", 2},    {"transformer", "dense", 1},
                        {"rmt-write-only", "dense", 2}, {"trxl-rmt", "dense", 2}, {"mtn", "dense", 3},
                        {"mtn-naive", "dense", 2},   {"no-memory", "dense", 1}, {"rmt", "hashed", 2},
                        {"mtn", "hashed", 2},        {"memformer", "hashed", 2}};
  for (const Case& c : cases) {
    CAPTURE(c.model);
    CAPTURE(c.linear);
    auto cfg = tiny(c.model, c.linear);
    auto s = stepped_view(cfg, c.steps);
    REQUIRE(s->step);
    if (std::string(c.model) != "memformer") CHECK_FALSE(s->step->attention.empty());
    CHECK(s->step->hash.empty() == (std::string(c.linear) == "dense"));
    auto other = stepped_view(cfg, 1);  // a different step for a few frames
    draw_frames(s, other);
  }
}

TEST_CASE("gui panels: attention maps are coloured on 0..1 by default, the range printed - auto scale only when chosen") {
  // The auto scale (0..this map's largest) paints a map's largest weight as bright as a weight of
  // 1, whatever it is; by default a colour means one weight on every map and step.
  for (const char* model : {"rmt", "memformer"}) {
    CAPTURE(model);
    auto s = stepped_view(tiny(model), 2);
    REQUIRE(s->step);
    const bool memformer = std::string(model) == "memformer";
    float largest = 0.f;
    if (memformer) {
      REQUIRE(s->step->memformer.has_writer());
      largest = s->step->memformer.block_max.empty() ? 0.f : s->step->memformer.block_max[0];
    } else {
      REQUIRE_FALSE(s->step->attention.empty());
      largest = s->step->attention.map_max(0, -1);
    }
    REQUIRE(largest > 0.f);  // the auto scale would print "colour 0..<largest> (this map's largest)"
    ui::NullTextureApi textures;
    RecordingController control;
    test::NullImGui ui(1600.f, 1000.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    for (int f = 0; f < 3; ++f) ui.frame(shell, s, control);
    if (memformer) {
      const auto& w = shell.panel<WriterAttentionPanel>(PanelId::kWriterAttention);
      CHECK(w.scale_min() == 0.f);
      CHECK(w.scale_max() == 1.f);
      CHECK(w.scale_text() == "colour 0..1");
    } else {
      CHECK(shell.attention().scale_max() == 1.f);
      CHECK(shell.attention().scale_text() == "colour 0..1");
    }
  }
}

TEST_CASE("gui panels: empty and absent traces draw without asserting") {
  auto doc = std::make_shared<const Document>(load_document(std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt"));
  for (const char* model : {"rmt", "trxl", "mtn"}) {
    CAPTURE(model);
    auto info = std::make_shared<ViewSource>();
    info->id = 7;
    info->doc = doc;
    info->cfg = tiny(model, "hashed");
    info->segment_len = 8;
    info->num_segments = 4;
    info->line_starts = line_starts_of(*doc);
    // A model whose step traced nothing, and one not stepped yet.
    auto snap = std::make_shared<Snapshot>();
    snap->segment = 0;
    snap->num_segments = 4;
    snap->length = 8;
    auto stepped = std::make_shared<PublishedView>();
    stepped->info = info;
    stepped->step = std::make_shared<StepData>(make_step_data(*snap, *doc, model));
    stepped->position = 0;
    CHECK(stepped->step->attention.empty());
    CHECK(stepped->step->hash.empty());
    CHECK_FALSE(stepped->step->mtn.present);
    auto unstepped = std::make_shared<PublishedView>();
    unstepped->info = info;
    draw_frames(stepped, unstepped);

    ExportRequest req;
    req.view = stepped;
    req.dir = test::temp_dir("gui-panels-empty") + "/out";
    for (PanelId id : {PanelId::kAttention, PanelId::kHashBuckets, PanelId::kMtnMemory}) {
      req.panel = id;
      CHECK(export_panel(req).empty());  // nothing traced, nothing written, no error
    }
  }
}

TEST_CASE("gui panels: the new panels export PNG, SVG and CSV") {
  const std::string dir = test::temp_dir("gui-panels-export");
  {
    ExportRequest req;
    req.view = stepped_view(tiny("rmt", "hashed"), 2);
    req.dir = dir + "/rmt";
    req.panel = PanelId::kAttention;
    req.attn_layer = 1;
    req.attn_head = 1;
    auto paths = export_panel(req);
    for (const char* f : {"attention_l1_head1.png", "attention_l1_head1.svg", "attention_l1_head1.csv", "attention_mass.png",
                          "attention_mass.svg", "attention_mass.csv"})
      CHECK_MESSAGE(test::file_exists(req.dir + "/seg-0001-" + f), f);
    req.attn_layer = 99;  // out of range: the first layer, the mean
    req.attn_head = 99;
    export_panel(req);
    CHECK(test::file_exists(req.dir + "/seg-0001-attention_l0_mean.csv"));

    req.panel = PanelId::kHashBuckets;
    const auto& h = req.view->step->hash;
    req.hash_path = h.paths.back().path;
    req.hash_table = 1;
    paths = export_panel(req);
    const std::string pb = req.dir + "/seg-0001-hash-" + req.hash_path;
    for (const char* ext : {".loads.png", ".loads.svg", ".loads.csv", ".table1.png", ".table1.svg", ".p.png", ".p.svg"})
      CHECK_MESSAGE(test::file_exists(pb + ext), ext);
    CHECK(test::file_exists(req.dir + "/seg-0001-hash_stats.csv"));
    for (const auto& p : paths) CHECK(test::file_exists(p));
    req.hash_path = "no.such.path";
    req.hash_table = -4;
    CHECK_FALSE(export_panel(req).empty());  // falls back to the first projection, table 0

    req.panel = PanelId::kControls;  // every panel that applies
    paths = export_panel(req);
    CHECK(test::file_exists(req.dir + "/seg-0001-document_tokens.csv"));
    CHECK_FALSE(test::file_exists(req.dir + "/seg-0001-writer_attention_mean.png"));
  }
  {
    ExportRequest req;
    req.view = stepped_view(tiny("trxl"), 2);
    req.dir = dir + "/trxl";
    req.panel = PanelId::kAttention;
    export_panel(req);
    for (const char* f : {"attention_l0_mean.png", "attention_l0_mean.csv", "attention_mass.csv"})
      CHECK_MESSAGE(test::file_exists(req.dir + "/seg-0001-" + f), f);
  }
  {
    ExportRequest req;
    req.view = stepped_view(tiny("mtn"), 3);
    req.dir = dir + "/mtn";
    req.panel = PanelId::kMtnMemory;
    export_panel(req);
    for (const char* f : {"mtn_memory.png", "mtn_memory.svg", "mtn_memory.csv", "mtn_memory_document.png",
                          "mtn_memory_importance.png", "mtn_memory_importance.csv"})
      CHECK_MESSAGE(test::file_exists(req.dir + "/seg-0002-" + f), f);
    req.panel = PanelId::kAttention;
    export_panel(req);
    CHECK(test::file_exists(req.dir + "/seg-0002-attention_l0_mean.svg"));
    int w = 0, hgt = 0;
    viz::read_png_rgba(req.dir + "/seg-0002-mtn_memory.png", &w, &hgt);
    CHECK(w > 200);
  }
}

TEST_CASE("MTN memory panel: an entry's tooltip gives its importance bar's scale, from 0 or the chunk's lowest importance to its highest") {
  const ViewPtr m = stepped_view(tiny("mtn"), 3);
  REQUIRE(m->step->mtn.entries.size() == 3u);
  // Known importances: the bars' ends are min(0, lowest) and the highest, written with %.3f.
  struct Case {
    float lo, hi;
    const char* says;
  };
  for (const Case& c : {Case{-1.5f, 0.8f, "bar: -1.500 (empty) to 0.800 (full)"},
                        Case{0.25f, 2.f, "bar: 0.000 (empty) to 2.000 (full)"}}) {
    CAPTURE(c.says);
    auto st = std::make_shared<StepData>(*m->step);
    st->mtn.imp_min = c.lo;
    st->mtn.imp_max = c.hi;
    st->mtn.entries[0].importance = c.hi;
    st->mtn.entries[1].importance = (c.lo + c.hi) / 2.f;
    st->mtn.entries[2].importance = c.lo;
    auto view = std::make_shared<PublishedView>(*m);
    view->step = st;
    test::PanelHarness panel_harness;
    try {
      test::NullImGui ui(900.f, 1000.f);
      MtnMemoryPanel panel;
      std::string seen;
      for (float y = 4.f; y < 1000.f; y += 6.f)  // down the kept entries' column: each entry is hovered in some frame
        seen += ui.logged_window("MTN memory", ImVec2(900, 1000), ImVec2(60.f, y), [&] {
          PanelContext ctx = panel_harness.context(*view);
          panel.draw(ctx);
        }) + "\n";
      CHECK(seen.find("memory entry 2") != std::string::npos);  // the sweep hovered the entries
      CHECK(seen.find(c.says) != std::string::npos);
    } catch (const test::ImGuiAssertFailure& e) {
      ImGui::SetCurrentContext(nullptr);
      FAIL(e.what());
    }
  }
}

TEST_CASE("Hash buckets panel: the p(z) title fits its half of the panel ('all tables, ' left to the tooltip when narrow)") {
  const ViewPtr view = stepped_view(tiny("rmt", "hashed"), 2);
  REQUIRE(!view->step->hash.empty());
  test::PanelHarness panel_harness;
  try {
    test::NullImGui ui(900.f, 1000.f);
    HashBucketsPanel panel;
    for (float width : {900.f, 330.f}) {
      CAPTURE(width);
      float half = 0.f;
      std::string log;
      for (int frame = 0; frame < 2; ++frame)  // the second frame draws with the path the first chose
        log = ui.logged_window("Hash buckets", ImVec2(width, 1000), ImVec2(-100, -100), [&] {
          half = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) * 0.5f;
          PanelContext ctx = panel_harness.context(*view);
          panel.draw(ctx);
        });
      CAPTURE(log);
      // The title's logged line: "p(z)" then the mean, as the panel draws them on one line.
      std::string title;
      for (const auto& l : test::log_lines(log))
        if (l.find("p(z)") != std::string::npos && l.find("mean ") != std::string::npos) title = l.substr(l.find("p(z)"));
      REQUIRE(!title.empty());
      CHECK((title.find("all tables, mean ") != std::string::npos) == (width > 600.f));
      ui.frame([&] { CHECK(ImGui::CalcTextSize(title.c_str()).x <= half); });
    }
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

#endif  // MNEMO_WITH_GUI

#ifdef MNEMO_WITH_GUI
TEST_CASE("document panel: the loss tint - a near-zero loss is tinted, visibly apart from an untinted token, 16 levels to 6 nats") {
  using mnemo::app::DocumentPanel;
  CHECK(DocumentPanel::loss_tint_position(0.f) == doctest::Approx(DocumentPanel::kLossTintFloor));
  CHECK(DocumentPanel::loss_tint_position(0.0012f) == doctest::Approx(0.2f));  // the RMT tour's recalled symbols
  CHECK(DocumentPanel::loss_tint_position(3.f) == doctest::Approx(0.2f + 0.8f * 0.5f));
  CHECK(DocumentPanel::loss_tint_position(6.f) == doctest::Approx(1.f));
  CHECK(DocumentPanel::loss_tint_position(12.f) == doctest::Approx(1.f));
  CHECK(DocumentPanel::loss_tint_position(-1.f) == doctest::Approx(0.2f));
  CHECK(std::isnan(DocumentPanel::loss_tint_position(NAN)));
  // The lowest level's colour is not the panel's background: magma(0.2) is a visible purple.
  const auto rgb = mnemo::viz::sample(mnemo::viz::Colormap::Magma, DocumentPanel::kLossTintFloor);
  CHECK(int(rgb.r) + int(rgb.g) + int(rgb.b) > 120);
}
#endif

#ifdef MNEMO_WITH_GUI
TEST_CASE("slot timeline: skipped segments show as a gap column, never as consecutive columns") {
  using mnemo::app::TimelinePanel;
  CHECK(TimelinePanel::columns_of({0, 1, 3}) == std::vector<int64_t>{0, 1, -1, 3});
  CHECK(TimelinePanel::columns_of({0, 1, 2}) == std::vector<int64_t>{0, 1, 2});
  CHECK(TimelinePanel::columns_of({0, 5, 6, 9}) == std::vector<int64_t>{0, -1, 5, 6, -1, 9});
  CHECK(TimelinePanel::columns_of({4}) == std::vector<int64_t>{4});
  CHECK(TimelinePanel::columns_of({}).empty());
}
#endif

#ifdef MNEMO_WITH_GUI
TEST_CASE("gui document: characters no font has are reported once and merged in from the fallback font") {
  // "d\xE9j\xE0 中文 ok": two bytes that are not UTF-8, two CJK characters of 3 bytes each.
  const std::string text = "d\xE9j\xE0 \xE4\xB8\xAD\xE6\x96\x87 ok";
  auto doc = std::make_shared<const Document>(make_document(text, "/tmp/mixed.txt"));
  CHECK(DocumentPanel::continues_character(*doc, 6));   // the 2nd and 3rd bytes of 中
  CHECK(DocumentPanel::continues_character(*doc, 7));
  CHECK_FALSE(DocumentPanel::continues_character(*doc, 5));  // its first byte
  CHECK_FALSE(DocumentPanel::continues_character(*doc, 1));  // \xE9: not UTF-8, drawn escaped
  CHECK(DocumentPanel::cell_text(*doc, 1) == "\\xE9");
  Document stray = make_document(std::string("\x80\x80" "a"), "/tmp/stray.txt");
  CHECK_FALSE(DocumentPanel::continues_character(stray, 1));  // no lead byte: escaped, not hidden
  auto info = std::make_shared<ViewSource>();
  info->id = 3;
  info->doc = doc;
  info->segment_len = 8;
  info->num_segments = 3;
  info->line_starts = line_starts_of(*doc);
  auto view = std::make_shared<PublishedView>();
  view->info = info;
  ui::NullTextureApi textures;
  RecordingController control;
  std::vector<char32_t> missing;
  try {
    test::NullImGui ui(1280.f, 720.f);
    {
      Shell shell(&textures, ui.fonts, nullptr, nullptr);
      for (int f = 0; f < 3; ++f) ui.frame(shell, view, control);
      missing = shell.document_panel().take_missing_glyphs();
      std::sort(missing.begin(), missing.end());
      CHECK(missing == std::vector<char32_t>{0x4E2D, 0x6587});  // DejaVu has neither
      for (int f = 0; f < 3; ++f) ui.frame(shell, view, control);
      CHECK(shell.document_panel().take_missing_glyphs().empty());  // each reported once
    }
    // The app then rebuilds the fonts with them: from the fallback font when it is installed.
    if (ui::fallback_font_path().empty()) {
      MNEMO_SKIP("fonts-droid-fallback is not installed (bash .ci/setup installs it): no CJK glyphs to merge");
    } else {
      ImGui::GetIO().Fonts->Clear();
      ui::UiFonts f = ui::load_fonts(15.f, 1.f, missing);
      unsigned char* px = nullptr;
      int tw = 0, th = 0;
      ImGui::GetIO().Fonts->GetTexDataAsRGBA32(&px, &tw, &th);
      REQUIRE(f.fallback);
      CHECK(f.mono->FindGlyphNoFallback(0x4E2D) != nullptr);
      CHECK(f.ui->FindGlyphNoFallback(0x6587) != nullptr);
      CHECK(f.mono->FindGlyphNoFallback(0x65E5) == nullptr);  // 日: not asked for, not in the atlas
      REQUIRE(f.small_mono != nullptr);
      CHECK(f.small_mono->FontSize < f.mono->FontSize);
    }
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}
#endif
