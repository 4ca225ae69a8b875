// The desktop app without a window: an ImGui context with no renderer backend (fonts built,
// io.DisplaySize set) draws every panel, the gallery and the dialogs for 100 frames on
// synthetic traces of several sizes; textures go through NullTextureApi (allocates nothing).
// IM_ASSERT is active (app/gui/panels/widgets/imgui_user_config.h) and routed to a handler that fails the test.
// (tests/support/gui_test.h includes LibTorch before doctest: glog's CHECK clashes with doctest's.)
#include "tests/support/gui_test.h"  // helpers, doctest and, with the GUI, the null backend and wait_worker
#ifdef MNEMO_WITH_GUI
#include "app/cli/cli.h"
#include "app/gui/shell/layout.h"
#include "app/gui/model/synthetic.h"

#include "viz/export.h"
#include "app/gui/panels/widgets/assert.h"
#include "app/gui/panels/widgets/fonts.h"

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <stdexcept>

using namespace mnemo;
using namespace mnemo::app;

namespace {



}  // namespace

TEST_CASE("gui null backend: every panel draws 100 frames on synthetic traces of several sizes") {
  struct Size {
    int slots, tokens, visited;
  };
  const Size sizes[] = {{1, 1, 1}, {1, 64, 3}, {4, 1, 5}, {16, 32, 12}, {1024, 512, 24}};
  for (const Size& sz : sizes) {
    CAPTURE(sz.slots);
    CAPTURE(sz.tokens);
    SyntheticSpec spec;
    spec.slots = sz.slots;
    spec.tokens = sz.tokens;
    spec.visited = sz.visited;
    spec.dim = sz.slots >= 1024 ? 64 : 16;
    ViewPtr s = make_synthetic_view(spec);
    REQUIRE(s->step);
    REQUIRE(s->step->memformer.slots == sz.slots);
    REQUIRE(s->step->memformer.cols == 1 + sz.tokens + 1);
    spec.seed = 9;
    ViewPtr s2 = make_synthetic_view(spec);

    ui::NullTextureApi textures;
    RecordingController control;
    try {
      test::NullImGui ui(1920.f, 1080.f);
      {
        Shell shell(&textures, ui.fonts, nullptr, nullptr);
        shell.set_panel_open(PanelId::kGallery, true);
        int64_t uploads_at_20 = 0;
        for (int f = 0; f < 100; ++f) {
          ImGuiIO& io = ImGui::GetIO();
          // A mouse sweeping the whole display: every hover tooltip gets drawn somewhere.
          io.MousePos = ImVec2(static_cast<float>((f * 197) % 1920), static_cast<float>(30 + (f * 131) % 1040));
          if (f == 30) shell.view_model().select_slot(0);
          if (f == 40) shell.view_model().select_slot(sz.slots - 1);
          if (f == 45) shell.view_model().set_retain_min(0.5f);
          if (f == 50) shell.view_model().set_head(1, 4);
          if (f == 60) io.DisplaySize = ImVec2(1280.f, 720.f);  // windows rescale to the smaller display
          if (f == 70) shell.gallery().set_size(f % GalleryPanel::size_count());
          if (f == 85) shell.push_error("a problem popup drawn over the panels");
          if (f == 95) shell.request_export(PanelId::kWriterAttention);
          ui.frame(shell, f >= 55 && f < 58 ? s2 : s, control);
          if (f == 20) uploads_at_20 = textures.uploads();
          if (f == 29) CHECK_MESSAGE(textures.uploads() == uploads_at_20, "textures re-uploaded without a change");
        }
        CHECK(textures.live() > 0);
        CHECK(shell.has_popup());
        CHECK(control.calls == 0);  // hovering alone never commands the model
      }
      CHECK(textures.live() == 0);  // every panel released its textures
    } catch (const test::ImGuiAssertFailure& e) {
      ImGui::SetCurrentContext(nullptr);
      FAIL(e.what());
    }
  }
}

TEST_CASE("gui null backend: IM_ASSERT is active in this build and reaches the handler") {
  bool fired = false;
  ui::set_imgui_assert_handler([&](const std::string& expr, const char*, int) {
    fired = true;
    throw test::ImGuiAssertFailure(expr);
  });
  ImVector<int> v;
  v.push_back(1);
  CHECK_THROWS_AS((void)v[3], test::ImGuiAssertFailure);  // ImVector's bounds check is an IM_ASSERT in imgui.h
  CHECK(fired);
  ui::set_imgui_assert_handler(nullptr);
}

TEST_CASE("gui null backend: the panels draw an empty view (no document, no step) without asserting") {
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1280.f, 720.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    shell.set_panel_open(PanelId::kGallery, true);
    auto empty = std::make_shared<PublishedView>();
    for (int f = 0; f < 20; ++f) ui.frame(shell, empty, control);
    ui.frame(shell, nullptr, control);
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

TEST_CASE("gui layout: default panels tile the work area at 1920x1080 and 1280x720") {
  for (ImVec2 d : {ImVec2(1920, 1080), ImVec2(1280, 720)}) {
    const ImVec2 wp(0, 22), ws(d.x, d.y - 22);
    float area = 0;
    for (PanelId id : {PanelId::kControls, PanelId::kDocument, PanelId::kWriterAttention, PanelId::kTimeline,
                       PanelId::kSlotTypes, PanelId::kForgetting, PanelId::kMemory}) {
      PanelRect r = default_panel_rect(id, wp, ws);
      CHECK(r.pos.x >= 0);
      CHECK(r.pos.y >= wp.y);
      CHECK(r.pos.x + r.size.x <= d.x + 0.5f);
      CHECK(r.pos.y + r.size.y <= d.y + 0.5f);
      CHECK(r.size.x >= 300.f);  // still usable at 1280x720
      CHECK(r.size.y >= 150.f);
      area += r.size.x * r.size.y;
    }
    CHECK(area == doctest::Approx(ws.x * ws.y).epsilon(0.01));  // no gaps, no overlaps
    PanelRect big{ImVec2(1500, 900), ImVec2(400, 170)};
    PanelRect small = rescale_rect(big, ImVec2(1920, 1080), ImVec2(1280, 720), wp);
    CHECK(small.pos.x + small.size.x <= 1280.5f);
    CHECK(small.pos.y + small.size.y <= 720.5f);
  }
}

TEST_CASE("gui export: every panel writes PNG, SVG and CSV through the viz code") {
  SyntheticSpec spec;
  spec.slots = 8;
  spec.tokens = 12;
  spec.visited = 4;
  ExportRequest req;
  req.view = make_synthetic_view(spec);
  req.panel = PanelId::kControls;  // all panels
  req.selected_slot = 2;
  req.dir = test::temp_dir("gui-export") + "/out";
  auto paths = export_panel(req);
  for (const char* name : {"writer_attention_mean", "slot_types", "forgetting", "memory", "slot_timeline", "document_loss"})
    for (const char* ext : {".png", ".svg"}) CHECK(test::file_exists(req.dir + "/seg-0003-" + name + ext));
  for (const char* name : {"writer_attention_mean", "slot_types", "forgetting", "memory", "memory_slots", "slot_timeline",
                           "document_tokens"})
    CHECK(test::file_exists(req.dir + "/seg-0003-" + std::string(name) + ".csv"));
  for (const auto& p : paths) CHECK(test::file_exists(p));
  int w = 0, h = 0;
  viz::read_png_rgba(req.dir + "/seg-0003-writer_attention_mean.png", &w, &h);
  CHECK(w > 200);

  req.panel = PanelId::kWriterAttention;
  req.head = 1;
  auto one = export_panel(req);
  CHECK(one.size() == 3);
  CHECK(test::file_exists(req.dir + "/seg-0003-writer_attention_head1.csv"));

  // A randomly initialised live model: every figure says so under it, the CSVs are data only.
  CHECK(test::read_file(req.dir + "/seg-0003-slot_types.svg").find("not a trained model") == std::string::npos);
  {
    ExportRequest random = req;
    auto view = std::make_shared<PublishedView>(*req.view);
    auto info = std::make_shared<ViewSource>(*view->info);
    info->random_weights = true;
    info->cfg.model = "memformer";
    info->seed = 7;
    view->info = info;
    random.view = view;
    random.panel = PanelId::kControls;
    random.dir = test::temp_dir("gui-export-random") + "/out";
    auto files = export_panel(random);
    int svgs = 0;
    for (const auto& f : files)
      if (f.size() > 4 && f.substr(f.size() - 4) == ".svg") {
        CAPTURE(f);
        CHECK(test::read_file(f).find("randomly initialised memformer (seed 7): not a trained model") != std::string::npos);
        ++svgs;
      }
    CHECK(svgs >= 5);
    CHECK(test::read_file(random.dir + "/seg-0003-slot_types.csv").find("random") == std::string::npos);
  }

  ExportRequest bad = req;
  bad.dir = "/proc/no-such-dir/x";
  CHECK_THROWS_WITH_AS(export_panel(bad), doctest::Contains("export folder"), InputError);
  bad = req;
  bad.view = std::make_shared<PublishedView>();
  CHECK_THROWS_AS(export_panel(bad), InputError);
}

TEST_CASE("gui worker: steps on its own thread, publishes immutable views, keeps state on bad input") {
  const std::string sample = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  auto cfg = test::tiny_memformer(4, 16);
  Worker w;
  CHECK(w.latest());
  CHECK_FALSE(w.latest()->info);
  w.start(sample, cfg, 3, "");
  for (int i = 0; i < 3; ++i) w.step(+1);
  test::wait_worker(w, 4);
  ViewPtr s = w.latest();
  REQUIRE(s->info);
  REQUIRE(s->step);
  CHECK(s->position == 2);
  CHECK(s->visited.size() == 3);
  CHECK(s->step->memformer.slots == 4);
  CHECK(s->step->memformer.cols == 1 + 16 + 1);
  CHECK(s->step->memformer.writer.size() == static_cast<size_t>((2 + 1) * 4 * 18));
  CHECK(s->step->memformer.memory.size() == static_cast<size_t>(4 * 16));
  CHECK(s->step->memformer.cos_prev.size() == 4u);
  CHECK(std::isfinite(s->token_loss(20)));   // segment 1, predicted by the step of segment 0
  CHECK(std::isnan(s->token_loss(3)));       // segment 0 is never predicted
  CHECK(w.take_errors().empty());

  // Bad input: a popup message each, and the previous state stays.
  const uint64_t info_id = s->info->id;
  w.open_document("/no/such/file.txt");
  ModelConfig bad = cfg;
  bad.dim = 15;  // not divisible by heads
  w.apply_model(bad, 0, "");
  w.apply_model(cfg, 0, "/no/such/checkpoint.safetensors");
  test::wait_worker(w, 7);
  auto errors = w.take_errors();
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].find("/no/such/file.txt") != std::string::npos);
  CHECK(errors[1].find("heads") != std::string::npos);
  CHECK(errors[2].find("checkpoint") != std::string::npos);
  ViewPtr after = w.latest();
  CHECK(after->info->id == info_id);
  CHECK(after->position == 2);
  CHECK(s->position == 2);  // a published view never changes

  // Back, jump, reset.
  w.step(-1);
  test::wait_worker(w, 8);
  CHECK(w.latest()->position == 1);
  w.jump(1000000);  // clamped to the last segment
  test::wait_worker(w, 9);
  CHECK(w.latest()->position == w.latest()->info->num_segments - 1);
  w.reset();
  test::wait_worker(w, 10);
  CHECK(w.latest()->position == -1);
  CHECK_FALSE(w.latest()->step);
  CHECK(w.latest()->visited.empty());

  // A new config applies: new info, nothing visited.
  auto cfg2 = test::tiny_memformer(6, 8);
  w.apply_model(cfg2, 1, "");
  w.step(+1);
  test::wait_worker(w, 12);
  CHECK(w.latest()->info->id != info_id);
  CHECK(w.latest()->step->memformer.slots == 6);
  CHECK(w.take_errors().empty());
}

TEST_CASE("gui worker: a long jump reports progress and can be cancelled") {
  // A document of many segments so the jump takes a while.
  std::string text(40000, 'a');
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + (i * 7) % 26);
  const std::string dir = test::temp_dir("gui-long");
  { std::ofstream(dir + "/long.txt") << text; }
  auto cfg = test::tiny_memformer(4, 8);  // 5000 segments
  Worker w;
  w.start(dir + "/long.txt", cfg, 0, "");
  test::wait_worker(w, 1);
  w.jump(4999);
  // Wait until it is measurably under way, then cancel.
  const auto t0 = std::chrono::steady_clock::now();
  while (w.progress() <= 0.f && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const float p = w.progress();
  w.cancel();
  test::wait_worker(w, 2);
  if (p > 0.f && p < 1.f) {
    CHECK(w.latest()->position == -1);  // cancelled: nothing shown
    CHECK_FALSE(w.latest()->step);
  }
  // The engine is still usable after a cancel.
  w.step(+1);
  test::wait_worker(w, 3);
  CHECK(w.latest()->position == 0);
}

#endif  // MNEMO_WITH_GUI

TEST_CASE("gui export: the Document panel writes the memory_benefit figure and CSV when the step has reset losses") {
  // What `gui --tint benefit --export DIR` (and File > Export) writes for a model with a memory:
  // the losses with the memory reset / zeroed are 1 / 2 nats above the carried ones here, so
  // every token's benefit is 1 / ln 2 = 1.4427 bits (and 2.8854 bits against zeroing).
  SyntheticSpec spec;
  spec.slots = 4;
  spec.tokens = 8;
  spec.visited = 2;
  ViewPtr synthetic = make_synthetic_view(spec);
  auto view = std::make_shared<PublishedView>(*synthetic);
  auto step = std::make_shared<StepData>(*view->step);
  REQUIRE_FALSE(step->token_losses.empty());
  step->token_losses_reset = step->token_losses;
  step->token_losses_zeroed = step->token_losses;
  for (float& v : step->token_losses_reset.values) v += 1.f;
  for (float& v : step->token_losses_zeroed.values) v += 2.f;
  view->step = step;
  ExportRequest req;
  req.view = view;
  req.panel = PanelId::kDocument;
  req.dir = test::temp_dir("gui-export-benefit") + "/out";
  export_panel(req);
  const std::string base = req.dir + "/seg-0001-document_memory_benefit";
  for (const char* ext : {".png", ".svg", ".csv"}) CHECK(test::file_exists(base + ext));
  std::istringstream csv(test::read_file(base + ".csv"));
  std::string line;
  std::getline(csv, line);
  CHECK(line == "token,id,text,loss_bits,loss_reset_bits,loss_zeroed_bits,benefit_bits,benefit_zeroed_bits");
  size_t rows = 0;
  while (std::getline(csv, line)) {
    // The last two fields: benefit against reset and against zeroed, in bits.
    const size_t b = line.rfind(','), a = line.rfind(',', b - 1);
    CAPTURE(line);
    CHECK(std::stod(line.substr(a + 1, b - a - 1)) == doctest::Approx(1.0 / std::log(2.0)).epsilon(1e-5));
    CHECK(std::stod(line.substr(b + 1)) == doctest::Approx(2.0 / std::log(2.0)).epsilon(1e-5));
    ++rows;
  }
  CHECK(rows == step->token_losses.values.size());
  // A step without reset losses (a model without a memory): no benefit files, no error.
  auto plain = std::make_shared<PublishedView>(*synthetic);
  auto plain_step = std::make_shared<StepData>(*synthetic->step);
  plain_step->token_losses_reset = TokenLosses{};
  plain_step->token_losses_zeroed = TokenLosses{};
  plain->step = plain_step;
  req.view = plain;
  req.dir = test::temp_dir("gui-export-no-benefit") + "/out";
  export_panel(req);
  CHECK(test::file_exists(req.dir + "/seg-0001-document_loss.png"));
  CHECK_FALSE(test::file_exists(req.dir + "/seg-0001-document_memory_benefit.png"));
}
