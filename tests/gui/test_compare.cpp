// Two models side by side: the difference maps against hand-computed values, the side-by-side
// figure and export, lockstep stepping of two real workers, and the shell drawing both
// columns (and A - B) at every gallery size in the null backend.
// (LibTorch and core headers before doctest: glog's CHECK clashes with doctest's.)
#ifdef MNEMO_WITH_GUI
#include "app/figures/compare.h"
#include "app/gui/model/lockstep.h"
#include "app/gui/model/synthetic.h"
#include "app/gui/model/worker.h"
#include "app/gui/shell/export.h"
#include "app/gui/shell/shell.h"
#endif
#include "tests/support/helpers.h"
#ifdef MNEMO_WITH_GUI
#include "tests/support/null_imgui.h"
#endif

#include <doctest/doctest.h>

#ifdef MNEMO_WITH_GUI
#include <imgui.h>
#include <imgui_internal.h>

#include <chrono>
#include <thread>

using namespace mnemo;
using namespace mnemo::app;

namespace {
StepData writer_step(int slots, int cols, std::vector<float> mean) {
  StepData s;
  s.slots = slots;
  s.cols = cols;
  s.heads = 1;
  // block 0 = mean, block 1 = head 0 (the same here)
  s.writer = mean;
  s.writer.insert(s.writer.end(), mean.begin(), mean.end());
  for (int c = 0; c < cols; ++c) s.col_labels.push_back(c == 0 ? "self" : "t" + std::to_string(c));
  return s;
}

void wait_idle(Worker& w, int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  while ((w.finished() < n || w.busy()) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(w.finished() >= n);
}
}  // namespace

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
  write_side_by_side(a, b, "memformer", "no forgetting", -1, 0, true, dir + "/sbs", FigureFormats::all(), out);
  CHECK(test::file_exists(dir + "/sbs.png"));
  CHECK(test::file_exists(dir + "/sbs.svg"));
  CHECK(test::file_exists(dir + "/sbs_a.csv"));
  CHECK(test::file_exists(dir + "/sbs_diff.csv"));
  const std::string svg = test::read_file(dir + "/sbs.svg");
  CHECK(svg.find("A: memformer") != std::string::npos);
  CHECK(svg.find("B: no forgetting") != std::string::npos);
  CHECK(svg.find("A - B") != std::string::npos);
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
  wait_idle(a, 5);
  wait_idle(b, 5);
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
    ViewPtr sa = make_synthetic_session(spec);
    spec.seed = 7;
    ViewPtr sb = make_synthetic_session(spec);
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
