// Two models side by side: the difference maps against hand-computed values, the side-by-side
// figure and export, lockstep stepping of two real workers, and the shell drawing both
// columns (and A - B) at every gallery size in the null backend.
// (tests/support/gui_test.h includes LibTorch before doctest: glog's CHECK clashes with doctest's.)
#include "tests/support/gui_test.h"  // helpers, doctest and, with the GUI, the null backend and wait_worker
#ifdef MNEMO_WITH_GUI
#include "app/figures/compare.h"
#include "app/gui/model/lockstep.h"
#include "app/gui/model/synthetic.h"

#include <imgui_internal.h>

#include <cmath>
#include <cstdio>

using namespace mnemo;
using namespace mnemo::app;

namespace {
StepData writer_step(int slots, int cols, std::vector<float> mean) {
  StepData s;
  s.memformer.slots = slots;
  s.memformer.cols = cols;
  s.memformer.heads = 1;
  // block 0 = mean, block 1 = head 0 (the same here)
  s.memformer.writer = mean;
  s.memformer.writer.insert(s.memformer.writer.end(), mean.begin(), mean.end());
  for (int c = 0; c < cols; ++c) s.memformer.col_labels.push_back(c == 0 ? "self" : "t" + std::to_string(c));
  return s;
}


TEST_CASE("side by side: A - B of writer maps, refused shapes, the shared scale") {
  StepData a = writer_step(2, 3, {0.5f, 0.25f, 0.25f, 1.f, 0.f, 0.f});
  StepData b = writer_step(2, 3, {0.2f, 0.5f, 0.3f, 0.9f, 0.1f, 0.f});
  DiffMap d = writer_difference(a, b, -1);
  REQUIRE(d.ok);
  CHECK(d.values[0] == doctest::Approx(0.3));
  CHECK(d.values[1] == doctest::Approx(-0.25));
  CHECK(d.values[4] == doctest::Approx(-0.1));
  CHECK(d.absmax == doctest::Approx(0.3));
  CHECK(d.col_labels[0] == "self");
  auto spec = difference_spec(d, "A - B");
  CHECK(spec.cmap == viz::Colormap::Diverging);
  CHECK(spec.vmin == doctest::Approx(-0.3));
  CHECK(spec.vmax == doctest::Approx(0.3));
  StepData c = writer_step(3, 3, std::vector<float>(9, 1.f / 3));
  DiffMap bad = writer_difference(a, c, -1);
  CHECK_FALSE(bad.ok);
  CHECK(bad.why.find("differ in shape") != std::string::npos);
  CHECK(shared_max(0.4f, 0.7f) == doctest::Approx(0.7));
  CHECK(shared_max(NAN, 0.7f) == doctest::Approx(0.7));

  // One figure: the three maps next to each other under one title, and three CSVs.
  a.segment = b.segment = 3;
  const std::string dir = test::temp_dir("sbs");
  std::vector<std::string> out;
  write_side_by_side(a, b, "memformer", "no forgetting", -1, 0, -1, true, 1, dir + "/sbs", FigureFormats::all(), out);
  CHECK(test::file_exists(dir + "/sbs.png"));
  CHECK(test::file_exists(dir + "/sbs.svg"));
  CHECK(test::file_exists(dir + "/sbs_diff.png"));
  CHECK(test::file_exists(dir + "/sbs_a.csv"));
  CHECK(test::file_exists(dir + "/sbs_diff.csv"));
  const std::string svg = test::read_file(dir + "/sbs.svg");
  CHECK(svg.find("A: memformer") != std::string::npos);
  CHECK(svg.find("B: no forgetting") != std::string::npos);
  CHECK(test::read_file(dir + "/sbs_diff.svg").find("A - B") != std::string::npos);
  CHECK(test::read_file(dir + "/sbs_diff.csv").find("0.3") != std::string::npos);
  viz::Figure f1, f2;
  f1.width = 100;
  f1.height = 50;
  viz::put_rect(f1, 10, 10, 5, 5, viz::Rgb{1, 2, 3});
  f2.width = 80;
  f2.height = 70;
  viz::put_rect(f2, 0, 0, 5, 5, viz::Rgb{1, 2, 3});
  viz::Figure both = side_by_side({f1, f2}, "", 20.f);
  CHECK(both.width == doctest::Approx(200));
  CHECK(both.height == doctest::Approx(70));
  CHECK(std::get<viz::Rect>(both.prims[1]).x == doctest::Approx(120));
}

// A step of a model of the attention family: one layer, `rows` x `cols` mean map (block 0)
// and one head (block 1, the same), a "write" row block of `writes` rows at the end.
StepData attention_step(int rows, int cols, int writes, float scale) {
  StepData s;
  s.segment = 3;
  AttentionData& a = s.attention;
  a.kind = "RMT";
  a.layers = {0};
  a.heads = 1;
  a.rows = rows;
  a.cols = cols;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < rows * cols; ++i) a.values.push_back(scale * static_cast<float>((i * 7) % 11) / 10.f);
  const float mx = *std::max_element(a.values.begin(), a.values.end());
  a.block_max = {mx, mx};
  for (int r = 0; r < rows; ++r) a.row_labels.push_back("q" + std::to_string(r));
  for (int c = 0; c < cols; ++c) a.col_labels.push_back("k" + std::to_string(c));
  a.row_blocks = {{0, rows - writes, "tokens"}, {rows - writes, writes, "write"}};
  a.col_blocks = a.row_blocks;
  return s;
}

// A copy of a view whose model is `model` (the panels follow the model kind), showing the
// step of `step_of` (one document, two models' steps).
ViewPtr as_model(const ViewPtr& v, const std::string& model, const ViewPtr& step_of) {
  auto info = std::make_shared<ViewSource>(*v->info);
  info->cfg.model = model;
  info->id += 17;
  auto out = std::make_shared<PublishedView>(*v);
  out->info = info;
  out->step = step_of->step;
  return out;
}

// The direct child windows of `w` whose name holds `part`.
int children_named(ImGuiWindow* w, const std::string& part) {
  int n = 0;
  for (ImGuiWindow* c : w->DC.ChildWindows) n += std::string(c->Name).find(part) != std::string::npos ? 1 : 0;
  return n;
}
ImGuiWindow* child_named(ImGuiWindow* w, const std::string& part) {
  for (ImGuiWindow* c : w->DC.ChildWindows) {
    if (std::string(c->Name).find(part) != std::string::npos) return c;
    if (ImGuiWindow* d = child_named(c, part)) return d;
  }
  return nullptr;
}

// The A and B columns of a side-by-side panel `w` (its "##side_a" / "##side_b" children), or,
// with `inner`, the child of that name inside each column (the Document's "##doctext"); both REQUIREd.
std::pair<ImGuiWindow*, ImGuiWindow*> side_columns(ImGuiWindow* w, const char* inner = nullptr) {
  REQUIRE(w);
  ImGuiWindow* a = child_named(w, "##side_a");
  ImGuiWindow* b = child_named(w, "##side_b");
  REQUIRE(a);
  REQUIRE(b);
  if (inner) {
    a = child_named(a, inner);
    b = child_named(b, inner);
    REQUIRE(a);
    REQUIRE(b);
  }
  return {a, b};
}

float max_of(const float* v, size_t n) {
  float m = -1.f;
  for (size_t i = 0; i < n; ++i) m = std::max(m, v[i]);
  return m;
}
}  // namespace

TEST_CASE("side by side: each side's loss and memory benefit against the per-token values") {
  StepData st;
  st.loss = 1.25;
  st.loss_next_segment = true;
  st.token_losses.first = 10;
  st.token_losses.values = {1.f, 1.5f};
  st.token_losses_reset.first = 10;
  st.token_losses_reset.values = {2.f, 1.5f};
  const SideSummary s = side_summary(st);
  CHECK(s.loss_nats == doctest::Approx(1.25));
  CHECK(s.first == 10);
  CHECK(s.last == 11);
  // (2 - 1) / ln 2 + 0 bits saved over the two tokens.
  CHECK(s.saved_bits == doctest::Approx(1.0 / std::log(2.0)).epsilon(1e-5));
  CHECK(s.saved_tokens == 2);
  CHECK(s.text().find("loss 1.2500 nats/token (next segment, 10..11)") != std::string::npos);
  CHECK(s.text().find("memory saves 1.4 bits vs reset (0.72/token)") != std::string::npos);
  StepData none;
  none.loss = 2.0;
  CHECK(side_summary(none).text().find("memory saves: not computed") != std::string::npos);
}

TEST_CASE("side by side: the export is a slide, A's map over B's at full width, the selected slot outlined") {
  StepData a = writer_step(4, 10, std::vector<float>(40, 0.1f));
  a.memformer.writer[0] = a.memformer.writer[40] = 0.9f;
  a.memformer.block_max = {0.9f, 0.9f};
  a.segment = 3;
  StepData b = attention_step(12, 12, 4, 0.5f);
  const viz::Figure f = side_by_side_slide(a, b, "memformer", "rmt", -1, 0, -1, true, 2, 1600.f);
  CHECK(f.width == doctest::Approx(1600.f).epsilon(0.03));
  CHECK(f.height <= 1600.f * 9.f / 16.f + 40.f);
  CHECK(f.height >= 600.f);
  // Headings: A above B; the maps' cells: A's above B's, each across most of the width.
  float ya = -1.f, yb = -1.f;
  std::vector<const viz::Rect*> cells;
  int outlines = 0;
  for (const auto& p : f.prims) {
    if (const auto* t = std::get_if<viz::Text>(&p)) {
      if (t->text.rfind("A: memformer", 0) == 0) ya = t->y;
      if (t->text.rfind("B: rmt", 0) == 0) yb = t->y;
    } else if (const auto* r = std::get_if<viz::Rect>(&p)) {
      if (r->cell) cells.push_back(r);
      else if (!r->fill && r->stroke && r->stroke_width >= 3.f) ++outlines;
    }
  }
  REQUIRE(ya >= 0.f);
  REQUIRE(yb >= 0.f);
  CHECK(ya < yb);
  REQUIRE(cells.size() == 4u * 10u + 12u * 12u);
  const viz::Rect* a_last = cells[39];
  const viz::Rect* b_first = cells[40];
  CHECK(a_last->y + a_last->h <= b_first->y);
  CHECK(a_last->x + a_last->w - cells[0]->x >= 0.8f * f.width);
  CHECK(cells.back()->x + cells.back()->w - b_first->x >= 0.8f * f.width);
  // The selected slot: A's writer row 2 and B's write-block row 2, each outlined.
  CHECK(outlines == 2);
  // One colour scale: both maps 0..0.9 (A's maximum; B's is 0.5), printed in the title.
  bool scale_printed = false;
  for (const auto& p : f.prims)
    if (const auto* t = std::get_if<viz::Text>(&p)) scale_printed = scale_printed || t->text.find("one colour scale 0..0.9") != std::string::npos;
  CHECK(scale_printed);
  // Written: the slide (its PNG 2x the figure), no A - B for maps of two kinds.
  const std::string dir = test::temp_dir("sbs-slide");
  std::vector<std::string> out;
  write_side_by_side(a, b, "memformer", "rmt", -1, 0, -1, true, 2, dir + "/s", FigureFormats::all(), out);
  CHECK(test::file_exists(dir + "/s.png"));
  CHECK_FALSE(test::file_exists(dir + "/s_diff.png"));
  const std::string png = test::read_file(dir + "/s.png");
  REQUIRE(png.size() > 24);
  auto be32 = [&](size_t i) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(png[i])) << 24) | (static_cast<uint32_t>(static_cast<uint8_t>(png[i + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(png[i + 2])) << 8) | static_cast<uint32_t>(static_cast<uint8_t>(png[i + 3]));
  };
  const uint32_t pw = be32(16), ph = be32(20);
  CAPTURE(pw);
  CAPTURE(ph);
  CHECK(pw > ph);  // landscape, not a strip of three maps
  CHECK(static_cast<float>(pw) / static_cast<float>(ph) < 2.2f);
}

TEST_CASE("side by side: two workers step in lockstep through one document") {
  const std::string doc = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  auto cfg = test::tiny_memformer(4, 16);
  auto cfg_b = cfg;
  cfg_b.forgetting = false;
  Worker a, b;
  a.start(doc, cfg, 1, "");
  b.start(doc, cfg_b, 1, "");
  LockstepController lock(&a, &b);
  lock.step(+1);
  lock.step(+1);
  lock.jump(5);
  lock.step(-1);
  test::wait_worker(a, 5);
  test::wait_worker(b, 5);
  CHECK(a.latest()->position == 4);
  CHECK(b.latest()->position == 4);
  CHECK(a.latest()->step->segment == b.latest()->step->segment);
  CHECK(a.latest()->info->cfg.forgetting);
  CHECK_FALSE(b.latest()->info->cfg.forgetting);
  CHECK(lock.progress() < 0.f);
  CHECK_FALSE(lock.busy());
}

TEST_CASE("side by side: the shell draws both columns and A - B at every gallery size - export writes the figure") {
  for (int g = 0; g < GalleryPanel::size_count(); ++g) {
    CAPTURE(GalleryPanel::size_name(g));
    int slots = 0, tokens = 0;
    REQUIRE(std::sscanf(GalleryPanel::size_name(g), "%d %*s x %d", &slots, &tokens) == 2);
    SyntheticSpec spec;
    spec.slots = slots;
    spec.tokens = tokens;
    spec.visited = 3;
    spec.dim = slots >= 1024 ? 64 : 16;
    spec.other_models = slots <= 16;
    ViewPtr sa = make_synthetic_view(spec);
    spec.seed = 7;
    ViewPtr sb = make_synthetic_view(spec);
    ui::NullTextureApi textures;
    RecordingController control;
    try {
      test::NullImGui ui(1920.f, 1080.f);
      Shell shell(&textures, ui.fonts, nullptr, nullptr);
      shell.set_compare_labels("seed 1", "seed 7");
      for (int f = 0; f < 12; ++f) {
        ImGui::GetIO().MousePos = ImVec2(static_cast<float>((f * 331) % 1920), static_cast<float>(40 + (f * 173) % 1000));
        if (f == 4) shell.set_same_scale(true);
        if (f == 6) shell.view_model().select_slot(slots - 1);
        if (f == 8) shell.set_show_difference(false);
        ui.frame([&] { shell.frame(sa, control, sb); });
        if (f == 5) {
          // Both columns and the difference of the writer attention are drawn.
          ImGuiWindow* w = ImGui::FindWindowByName(panel_title(PanelId::kWriterAttention));
          REQUIRE(w);
          int columns = 0;
          for (ImGuiWindow* child : w->DC.ChildWindows) {
            const std::string name = child->Name;
            columns += name.find("##side_a") != std::string::npos || name.find("##side_b") != std::string::npos ||
                       name.find("##side_diff") != std::string::npos;
          }
          CHECK(columns == 3);
        }
      }
      CHECK(control.calls == 0);
      if (g == 3) {
        ExportRequest req = shell.export_request(PanelId::kWriterAttention, sa, test::temp_dir("sbs-export"));
        CHECK(req.compare == sb);
        auto paths = export_panel(req);
        bool fig = false;
        for (const auto& p : paths) fig = fig || p.find("side_by_side.png") != std::string::npos;
        CHECK(fig);
      }
    } catch (const test::ImGuiAssertFailure& e) {
      ImGui::SetCurrentContext(nullptr);
      FAIL(e.what());
    }
  }
}

TEST_CASE("side by side: A - B of two maps of different shapes takes a narrow column that says why - the maps keep the width") {
  SyntheticSpec spec;
  spec.slots = 8;
  spec.tokens = 32;
  spec.visited = 3;
  ViewPtr sa = make_synthetic_view(spec);
  spec.tokens = 48;  // the writer maps differ in shape: 8 x (1 + 32 + cls) vs 8 x (1 + 48 + cls)
  spec.seed = 7;
  ViewPtr sb = make_synthetic_view(spec);
  REQUIRE(sa->step->memformer.cols != sb->step->memformer.cols);
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1600.f, 1000.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    shell.set_compare_labels("32 tokens", "48 tokens");
    for (int f = 0; f < 4; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
    ImGuiWindow* w = ImGui::FindWindowByName(panel_title(PanelId::kWriterAttention));
    const auto [side_a, side_b] = side_columns(w);
    ImGuiWindow* side_diff = child_named(w, "##side_diff");
    REQUIRE(side_diff);
    const float wa = side_a->Size.x, wb = side_b->Size.x, wd = side_diff->Size.x;
    REQUIRE(wd > 0.f);
    CHECK(wa == doctest::Approx(wb));
    CHECK(wd < wa);
    // The two maps get the width the A - B column does not need: each well over an equal third.
    CHECK(wa > 1.15f * (wa + wb + wd) / 3.f);
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

TEST_CASE("side by side: a Memformer beside an RMT draws both memories, one colour scale, documents in lockstep") {
  SyntheticSpec spec;
  spec.slots = 8;
  spec.tokens = 32;
  spec.visited = 60;  // a document of many rows: the Document columns scroll
  spec.other_models = true;
  ViewPtr sa = make_synthetic_view(spec);
  spec.seed = 7;
  ViewPtr sb = as_model(sa, "rmt", make_synthetic_view(spec));
  REQUIRE(panel_applies(PanelId::kAttention, *sb));
  REQUIRE_FALSE(panel_applies(PanelId::kWriterAttention, *sb));
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1600.f, 1000.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    shell.set_compare_labels("memformer", "rmt");
    CHECK(shell.same_scale());  // one colour scale by default
    for (int f = 0; f < 6; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
    // Writer attention: A draws; B says in one line that it has none (no B column).
    ImGuiWindow* writer = ImGui::FindWindowByName(panel_title(PanelId::kWriterAttention));
    REQUIRE(writer);
    CHECK(children_named(writer, "##side_a") == 1);
    CHECK(children_named(writer, "##side_b") == 0);
    // Attention (greyed out before: it followed A only): B draws it, A has no column.
    ImGuiWindow* attn = ImGui::FindWindowByName(panel_title(PanelId::kAttention));
    REQUIRE(attn);
    CHECK(attn->Active);
    CHECK(children_named(attn, "##side_b") == 1);
    CHECK(children_named(attn, "##side_a") == 0);
    CHECK(shell.applies_here(PanelId::kAttention, *sa));
    // The two memories do not cover each other in the default layout.
    const ImRect rw = writer->Rect(), ra = attn->Rect();
    CHECK_FALSE(rw.Overlaps(ImRect(ra.Min.x + 1.f, ra.Min.y + 1.f, ra.Max.x - 1.f, ra.Max.y - 1.f)));
    // Panels of both sides: Slot types (A only) and Document (both columns).
    ImGuiWindow* doc = ImGui::FindWindowByName(panel_title(PanelId::kDocument));
    REQUIRE(doc);
    CHECK(children_named(doc, "##side_a") == 1);
    CHECK(children_named(doc, "##side_b") == 1);

    // By default both maps are on the fixed 0..1 scale (a weight's full range), so one scale.
    CHECK(shell.panel<WriterAttentionPanel>(PanelId::kWriterAttention).vmax() == 1.f);
    CHECK(shell.panel_b<AttentionPanel>(PanelId::kAttention).vmax() == 1.f);
    // With the auto scale (0..max) chosen, one colour scale is the larger maximum of A's writer
    // attention and B's attention map, computed here from the maps' values.
    shell.panel<WriterAttentionPanel>(PanelId::kWriterAttention).set_scale(0);
    shell.panel_b<WriterAttentionPanel>(PanelId::kWriterAttention).set_scale(0);
    shell.panel<AttentionPanel>(PanelId::kAttention).set_scale(0);
    shell.panel_b<AttentionPanel>(PanelId::kAttention).set_scale(0);
    for (int f = 0; f < 3; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
    const StepData& a = *sa->step;
    const StepData& b = *sb->step;
    const float ma = max_of(a.memformer.writer_block(-1), static_cast<size_t>(a.memformer.slots) * static_cast<size_t>(a.memformer.cols));
    const float mb = max_of(b.attention.map(0, -1), static_cast<size_t>(b.attention.rows) * static_cast<size_t>(b.attention.cols));
    CHECK(ma != doctest::Approx(mb));
    CHECK(shell.compare_scale_max() == doctest::Approx(std::max(ma, mb)).epsilon(1e-5));
    CHECK(shell.panel<WriterAttentionPanel>(PanelId::kWriterAttention).vmax() == doctest::Approx(std::max(ma, mb)).epsilon(1e-5));
    CHECK(shell.panel_b<AttentionPanel>(PanelId::kAttention).vmax() == doctest::Approx(std::max(ma, mb)).epsilon(1e-5));
    // Per side when switched off: each its own maximum.
    shell.set_same_scale(false);
    for (int f = 0; f < 3; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
    CHECK(std::isnan(shell.compare_scale_max()));
    CHECK(shell.panel<WriterAttentionPanel>(PanelId::kWriterAttention).vmax() == doctest::Approx(ma).epsilon(1e-5));
    CHECK(shell.panel_b<AttentionPanel>(PanelId::kAttention).vmax() == doctest::Approx(mb).epsilon(1e-5));

    // Lockstep scroll: scrolling A's document brings B's to the same token row, and back.
    const auto [text_a, text_b] = side_columns(doc, "##doctext");
    REQUIRE(text_a->ScrollMax.y > 100.f);
    ImGui::SetScrollY(text_a, 0.5f * text_a->ScrollMax.y);
    for (int f = 0; f < 4; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
    const int64_t top = shell.document_panel().top_token();
    CHECK(top > 0);
    CHECK(shell.panel_b<DocumentPanel>(PanelId::kDocument).top_token() == top);
    CHECK(text_b->Scroll.y == doctest::Approx(text_a->Scroll.y).epsilon(0.01));
    ImGui::SetScrollY(text_b, 0.f);
    for (int f = 0; f < 4; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
    CHECK(shell.document_panel().top_token() == 0);
    CHECK(shell.panel_b<DocumentPanel>(PanelId::kDocument).top_token() == 0);
    CHECK(control.calls == 0);

    // Export: the slide of A's writer attention over B's attention map.
    ExportRequest req = shell.export_request(PanelId::kAttention, sa, test::temp_dir("sbs-mixed"));
    auto paths = export_panel(req);
    bool fig = false;
    for (const auto& p : paths) fig = fig || p.find("side_by_side.svg") != std::string::npos;
    REQUIRE(fig);
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

// The side-by-side layout (docs/gui.md#side-by-side) at a laptop's 1280x720 and at 1600x1000,
// for a Memformer beside an RMT, an RMT beside a Transformer-XL and a Memformer beside an MTN:
// each side's Document column holds a readable line of text and several rows, and each side's
// memory maps keep a height to read them (they were 19 characters a line and a 10 px map).
TEST_CASE("side by side: the layout gives each Document column its characters a line and each memory map its height") {
  struct Pair {
    const char* a;
    const char* b;
  };
  struct Size {
    float w, h;
    int columns;      // characters a line in each side's Document
    float attn_map;   // the writer attention and attention maps' plot height, px
    float other_map;  // the Memory and Slot timeline maps' plot height, px (a Memformer beside an MTN
                      // keeps them in the right column, four panels high: the least room)
  };
  for (const Pair pair : {Pair{"memformer", "rmt"}, Pair{"rmt", "trxl"}, Pair{"memformer", "mtn"}}) {
    for (const Size size : {Size{1280.f, 720.f, 32, 120.f, 50.f}, Size{1600.f, 1000.f, 45, 180.f, 100.f}}) {
      CAPTURE(pair.a);
      CAPTURE(pair.b);
      CAPTURE(size.w);
      SyntheticSpec spec;
      spec.slots = 32;
      spec.tokens = 32;
      spec.visited = 8;
      spec.other_models = true;
      ViewPtr base = make_synthetic_view(spec);
      ViewPtr sa = as_model(base, pair.a, base);
      spec.seed = 7;
      ViewPtr sb = as_model(base, pair.b, make_synthetic_view(spec));
      ui::NullTextureApi textures;
      RecordingController control;
      try {
        test::NullImGui ui(size.w, size.h);
        Shell shell(&textures, ui.fonts, nullptr, nullptr);
        shell.set_compare_labels(std::string(pair.a) + "-general", std::string(pair.b) + "-general");
        shell.view_model().select_slot(3);  // the timeline's "what slot 3 holds" list under its map
        for (int f = 0; f < 8; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
        DocumentPanel& doc_a = shell.document_panel();
        DocumentPanel& doc_b = shell.panel_b<DocumentPanel>(PanelId::kDocument);
        MESSAGE(std::string(pair.a) << " | " << std::string(pair.b) << " at " << size.w << ": Document columns " << doc_a.columns() << " | "
                       << doc_b.columns() << ", rows " << doc_a.text_rows() << " | " << doc_b.text_rows());
        CHECK(doc_a.columns() >= size.columns);
        CHECK(doc_b.columns() >= size.columns);
        CHECK(doc_a.text_rows() >= 6.f);
        CHECK(doc_b.text_rows() >= 6.f);
        // Each side's maps: A's from its own panels, B's from side B's.
        for (const bool side_b : {false, true}) {
          const PublishedView& v = side_b ? *sb : *sa;
          for (PanelId id : {PanelId::kWriterAttention, PanelId::kAttention, PanelId::kMemory, PanelId::kTimeline}) {
            if (!panel_applies(id, v)) continue;
            CAPTURE(side_b);
            CAPTURE(panel_title(id));
            const Panel& p = side_b ? static_cast<Panel&>(shell.panel_b<Panel>(id)) : shell.panel<Panel>(id);
            const bool attention_map = id == PanelId::kWriterAttention || id == PanelId::kAttention;
            MESSAGE(std::string(pair.a) << " | " << std::string(pair.b) << " at " << size.w << ": " << (side_b ? "B " : "A ")
                           << std::string(panel_title(id))
                           << " map " << p.map_height() << " px");
            CHECK(p.map_height() >= (attention_map ? size.attn_map : size.other_map));
          }
        }
        // The MTN memory panel (its own strip and table): at least a third of the height.
        if (panel_applies(PanelId::kMtnMemory, *sb)) {
          ImGuiWindow* mtn = ImGui::FindWindowByName(panel_title(PanelId::kMtnMemory));
          REQUIRE(mtn);
          CHECK(mtn->Size.y >= size.h / 3.f);
          CHECK(mtn->Size.x >= 0.2f * size.w);
        }
        // The timeline's list shows rows beside its map.
        CHECK(shell.timeline().holds_rows_shown() != 0);
      } catch (const test::ImGuiAssertFailure& e) {
        ImGui::SetCurrentContext(nullptr);
        FAIL(e.what());
      }
    }
  }
}

TEST_CASE("side by side: both Document columns start their text at the same y when only one side has a notice") {
  // B's document is unlike its model's training text: B's column says so in a line of its own,
  // which pushed B's text a line below A's, so the two columns' rows did not line up.
  SyntheticSpec spec;
  spec.slots = 8;
  spec.tokens = 32;
  spec.visited = 6;
  spec.other_models = true;
  ViewPtr sa = make_synthetic_view(spec);
  spec.seed = 7;
  ViewPtr rmt = as_model(sa, "rmt", make_synthetic_view(spec));
  auto info = std::make_shared<ViewSource>(*rmt->info);
  info->doc_warnings = {"line breaks, which the training text never held"};
  auto sb = std::make_shared<PublishedView>(*rmt);
  sb->info = info;
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1600.f, 1000.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    shell.set_compare_labels("memformer", "rmt");
    for (int f = 0; f < 6; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
    const auto [text_a, text_b] = side_columns(ImGui::FindWindowByName(panel_title(PanelId::kDocument)), "##doctext");
    // B's header holds the notice (a line more than A's) ...
    const float line = ImGui::GetTextLineHeight();
    CHECK(shell.panel_b<DocumentPanel>(PanelId::kDocument).header_end() >= shell.document_panel().header_end() + line);
    // ... and both texts start at the same height.
    CHECK(text_a->Pos.y == doctest::Approx(text_b->Pos.y));
    CHECK(text_a->Size.y == doctest::Approx(text_b->Size.y));
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

TEST_CASE("document panel: scrolled, its first text row starts below the header - never cut under it - and a small "
          "wheel step still moves a row") {
  SyntheticSpec spec;
  spec.slots = 8;
  spec.tokens = 32;
  spec.visited = 60;  // a document of many rows
  spec.other_models = true;
  ViewPtr sa = make_synthetic_view(spec);
  spec.seed = 7;
  ViewPtr sb = as_model(sa, "rmt", make_synthetic_view(spec));
  ui::NullTextureApi textures;
  RecordingController control;
  for (const bool compare : {false, true}) {
    CAPTURE(compare);
    try {
      test::NullImGui ui(1280.f, 720.f);
      Shell shell(&textures, ui.fonts, nullptr, nullptr);
      if (compare) shell.set_compare_labels("memformer", "rmt");
      auto frames = [&](int n) {
        for (int f = 0; f < n; ++f) ui.frame([&] { compare ? shell.frame(sa, control, sb) : shell.frame(sa, control); });
      };
      frames(6);
      ImGuiWindow* doc = ImGui::FindWindowByName(panel_title(PanelId::kDocument));
      REQUIRE(doc);
      ImGuiWindow* text = child_named(doc, "##doctext");
      REQUIRE(text);
      const DocumentPanel& panel = shell.document_panel();
      const float rh = panel.row_height();
      REQUIRE(rh > 0.f);
      REQUIRE(text->ScrollMax.y > 6.f * rh);
      // The header's bottom: where the panel's header lines ended (window-local y of the window
      // or side column the panel draws in, the text's parent).
      const float header_bottom = text->ParentWindow->Pos.y + panel.header_end();
      for (const float to : {2.5f * rh, 0.37f * text->ScrollMax.y, text->ScrollMax.y - 0.4f * rh, text->ScrollMax.y}) {
        CAPTURE(to);
        ImGui::SetScrollY(text, to);
        frames(4);
        CHECK(panel.first_row_top() >= header_bottom - 0.5f);
        CHECK(panel.first_row_top() >= text->Pos.y - 0.5f);
        // A whole row at the top: the scroll is a multiple of the row height.
        const float off = std::fmod(text->Scroll.y, rh);
        CHECK((off < 0.5f || off > rh - 0.5f));
      }
      // A wheel or touchpad step of a fifth of a row moves a whole row, down and up.
      ImGui::SetScrollY(text, 0.f);
      frames(4);
      REQUIRE(text->Scroll.y == doctest::Approx(0.f));
      ImGui::SetScrollY(text, 0.2f * rh);
      frames(4);
      CHECK(text->Scroll.y == doctest::Approx(rh).epsilon(0.01));
      ImGui::SetScrollY(text, 0.8f * rh);
      frames(4);
      CHECK(text->Scroll.y == doctest::Approx(0.f));
      if (compare) {  // B's column follows A's to the same (whole) row
        ImGuiWindow* text_b = child_named(child_named(doc, "##side_b"), "##doctext");
        REQUIRE(text_b);
        ImGui::SetScrollY(text, 0.37f * text->ScrollMax.y);
        frames(6);
        CHECK(text_b->Scroll.y == doctest::Approx(text->Scroll.y));
        CHECK(shell.panel_b<DocumentPanel>(PanelId::kDocument).top_token() == panel.top_token());
      }
    } catch (const test::ImGuiAssertFailure& e) {
      ImGui::SetCurrentContext(nullptr);
      FAIL(e.what());
    }
  }
}

namespace {
std::string found(const std::vector<std::string>& paths, const std::string& part, const std::string& end) {
  for (const auto& p : paths)
    if (p.find(part) != std::string::npos && p.size() >= end.size() && p.compare(p.size() - end.size(), end.size(), end) == 0)
      return p;
  return "";
}
std::string fmt3g(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", static_cast<double>(v));
  return b;
}
}  // namespace

TEST_CASE("side by side: Export all writes each side's panel figures named A and B beside the slide - each map on the "
          "colour range its panel draws, printed") {
  SyntheticSpec spec;
  spec.slots = 8;
  spec.tokens = 32;
  spec.other_models = true;
  ViewPtr sa = make_synthetic_view(spec);
  spec.seed = 7;
  ViewPtr sb = as_model(sa, "rmt", make_synthetic_view(spec));
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1600.f, 1000.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    shell.set_compare_labels("memformer", "rmt");
    for (int f = 0; f < 4; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
    const std::string dir = test::temp_dir("sbs-export-all");
    ExportRequest req = shell.export_request(PanelId::kControls, sa, dir);
    const auto paths = export_panel(req);
    CAPTURE(paths.size());
    // The slide, and each side's own figures: A's Memformer panels, B's attention map, both Documents.
    CHECK_FALSE(found(paths, "-side_by_side", ".png").empty());
    const std::string a_writer = found(paths, "-A-writer_attention", ".svg");
    const std::string b_attn = found(paths, "-B-attention_l", ".svg");
    REQUIRE_FALSE(a_writer.empty());
    REQUIRE_FALSE(b_attn.empty());
    CHECK_FALSE(found(paths, "-A-slot_types", ".png").empty());
    CHECK(found(paths, "-B-writer_attention", ".svg").empty());  // an RMT has no writer
    CHECK(found(paths, "-A-attention_l", ".svg").empty());       // nor does this Memformer draw Attention
    CHECK_FALSE(found(paths, "-A-document", ".csv").empty());
    CHECK_FALSE(found(paths, "-B-document", ".csv").empty());
    // Each side's figures are its own: B's attention matrix equals what exporting B alone writes,
    // A's writer attention matrix what exporting A alone writes.
    auto alone = [&](const ViewPtr& v, PanelId id, const std::string& part) {
      ExportRequest r;
      r.panel = id;
      r.view = v;
      r.dir = test::temp_dir("sbs-export-alone-" + part);
      return test::read_file(found(export_panel(r), part, ".csv"));
    };
    const std::string b_csv = found(paths, "-B-attention_l", ".csv"), a_csv = found(paths, "-A-writer_attention", ".csv");
    REQUIRE_FALSE(b_csv.empty());
    REQUIRE_FALSE(a_csv.empty());
    CHECK(test::read_file(b_csv) == alone(sb, PanelId::kAttention, "attention_l"));
    CHECK(test::read_file(a_csv) == alone(sa, PanelId::kWriterAttention, "writer_attention"));
    // Colour ranges: the screen's default is the fixed 0..1 on both sides; so are the figures.
    CHECK(shell.panel<WriterAttentionPanel>(PanelId::kWriterAttention).vmax() == 1.f);
    CHECK(shell.panel_b<AttentionPanel>(PanelId::kAttention).vmax() == 1.f);
    CHECK(test::read_file(a_writer).find(", colour 0..1<") != std::string::npos);
    CHECK(test::read_file(b_attn).find(", colour 0..1<") != std::string::npos);
    CHECK(test::read_file(found(paths, "-side_by_side", ".svg")).find("one colour scale 0..1<") != std::string::npos);
    // On the auto scale with one colour scale: both on 0..the larger maximum, as drawn.
    shell.panel<WriterAttentionPanel>(PanelId::kWriterAttention).set_scale(0);
    shell.panel_b<WriterAttentionPanel>(PanelId::kWriterAttention).set_scale(0);
    shell.panel<AttentionPanel>(PanelId::kAttention).set_scale(0);
    shell.panel_b<AttentionPanel>(PanelId::kAttention).set_scale(0);
    for (int f = 0; f < 4; ++f) ui.frame([&] { shell.frame(sa, control, sb); });
    const float m = shell.panel_b<AttentionPanel>(PanelId::kAttention).vmax();
    REQUIRE(m < 1.f);
    CHECK(shell.panel<WriterAttentionPanel>(PanelId::kWriterAttention).vmax() == m);
    const auto auto_paths = export_panel(shell.export_request(PanelId::kControls, sa, test::temp_dir("sbs-export-auto")));
    const std::string want = ", colour 0.." + fmt3g(m) + "<";
    CHECK(test::read_file(found(auto_paths, "-A-writer_attention", ".svg")).find(want) != std::string::npos);
    CHECK(test::read_file(found(auto_paths, "-B-attention_l", ".svg")).find(want) != std::string::npos);
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

TEST_CASE("attention export: the figure's colour range is the panel's - the fixed 0..1 by default, 0..the map's "
          "largest when chosen - printed in its title") {
  SyntheticSpec spec;
  spec.slots = 8;
  spec.tokens = 32;
  spec.other_models = true;
  ViewPtr sa = make_synthetic_view(spec);
  ViewPtr rmt = as_model(sa, "rmt", sa);
  REQUIRE(panel_applies(PanelId::kAttention, *rmt));
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1600.f, 1000.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    for (int f = 0; f < 3; ++f) ui.frame([&] { shell.frame(rmt, control); });
    CHECK(shell.attention().scale_max() == 1.f);  // the default
    ExportRequest req = shell.export_request(PanelId::kAttention, rmt, test::temp_dir("attn-export-fixed"));
    CHECK(req.attn_vmax == 1.f);
    auto paths = export_panel(req);
    const std::string fixed = test::read_file(found(paths, "attention_l", ".svg"));
    CHECK(fixed.find(", colour 0..1<") != std::string::npos);
    // 0..max chosen: the map's largest weight (computed here), as the panel prints it.
    shell.attention().set_scale(0);
    for (int f = 0; f < 2; ++f) ui.frame([&] { shell.frame(rmt, control); });
    const AttentionData& a = rmt->step->attention;
    const float mx = max_of(a.map(0, -1), static_cast<size_t>(a.rows) * static_cast<size_t>(a.cols));
    CHECK(shell.attention().scale_max() == doctest::Approx(mx).epsilon(1e-6));
    CHECK(shell.attention().scale_text() == "colour 0.." + fmt3g(mx) + " (this map's largest)");
    req = shell.export_request(PanelId::kAttention, rmt, test::temp_dir("attn-export-auto"));
    CHECK(req.attn_vmax == shell.attention().scale_max());
    paths = export_panel(req);
    CHECK(test::read_file(found(paths, "attention_l", ".svg")).find(", colour 0.." + fmt3g(mx) + "<") !=
          std::string::npos);
    // The writer attention likewise (a Memformer): 0..1 by default.
    for (int f = 0; f < 3; ++f) ui.frame([&] { shell.frame(sa, control); });
    paths = export_panel(shell.export_request(PanelId::kWriterAttention, sa, test::temp_dir("writer-export-fixed")));
    CHECK(test::read_file(found(paths, "writer_attention", ".svg")).find(", colour 0..1<") !=
          std::string::npos);
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

TEST_CASE("attention panel: a block mass n/a on every layer (an MTN step writes no memory) is left out of the legend and "
          "the bars") {
  SyntheticSpec spec;
  spec.slots = 8;
  spec.tokens = 32;
  spec.other_models = true;
  ViewPtr sa = make_synthetic_view(spec);
  // An MTN-like step: the same map, its writing and rewriting masses n/a on every layer and head
  // (no write rows), reading with a value.
  auto st = std::make_shared<StepData>(*sa->step);
  AttentionData& a = st->attention;
  REQUIRE(a.mass_names == std::vector<std::string>{"reading", "writing", "rewriting"});
  a.kind = "MTN";
  const size_t nm = a.mass_names.size();
  for (size_t i = 0; i < a.mass.size(); ++i)
    if (i % nm != 0) a.mass[i] = NAN;
  auto mtn_view = std::make_shared<PublishedView>(*sa);
  mtn_view->step = st;
  ViewPtr mtn = as_model(mtn_view, "mtn", mtn_view);
  ViewPtr rmt = as_model(sa, "rmt", sa);
  REQUIRE(panel_applies(PanelId::kAttention, *mtn));
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1600.f, 1000.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    for (int f = 0; f < 3; ++f) ui.frame([&] { shell.frame(mtn, control); });
    CHECK(shell.attention().mass_legend() == std::vector<std::string>{"reading"});
    // One head chosen: the same (every head is n/a for those masses).
    shell.attention().select(0, 1);
    for (int f = 0; f < 2; ++f) ui.frame([&] { shell.frame(mtn, control); });
    CHECK(shell.attention().mass_legend() == std::vector<std::string>{"reading"});
    // A mass with a value on one layer only is drawn (that layer's bar; n/a on the others).
    for (size_t b = 0; b < static_cast<size_t>(a.blocks()); ++b) a.mass[b * nm + 2] = 0.25f;  // layer index 0, rewriting
    shell.attention().select(0, -1);
    for (int f = 0; f < 2; ++f) ui.frame([&] { shell.frame(mtn, control); });
    CHECK(shell.attention().mass_legend() == std::vector<std::string>{"reading", "rewriting"});
    // An RMT step with all three masses lists all three.
    for (int f = 0; f < 3; ++f) ui.frame([&] { shell.frame(rmt, control); });
    CHECK(shell.attention().mass_legend() == std::vector<std::string>{"reading", "writing", "rewriting"});
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

TEST_CASE("cli: gui --compare-model refuses a model it cannot build, before any window opens") {
  const std::string sample = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  auto r = test::run_cli("gui --doc " + sample + " --compare-model /no/such/model.safetensors --quit");
  CAPTURE(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("--compare-model: '/no/such/model.safetensors' is neither a zoo model nor a file") != std::string::npos);
  r = test::run_cli("gui --session /tmp --compare-model memformer-copy --quit");
  CHECK(r.code == 2);
}

#endif  // MNEMO_WITH_GUI
