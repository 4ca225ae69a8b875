// `mnemoscope bench ui` and `mnemoscope bench dashboard`: frame times of the desktop app with
// every panel open on synthetic traces of a chosen size (ui), or with the training dashboard
// drawing four curves of 10^6 points over the live maps (dashboard). UI work is timed as wall
// time and as UI-thread CPU time; GL rasterisation (glFinish) separately. Needs a display
// (xvfb-run works).
#include "app/bench/benches.h"
#include "app/bench/stats.h"
#include "app/figures/memory_reads.h"
#include "app/gui/model/controller.h"
#include "app/gui/model/synthetic.h"
#include "app/gui/panels/registry.h"
#include "app/gui/panels/widgets/fonts.h"
#include "app/gui/panels/widgets/texture.h"
#include "app/gui/platform/gl_textures.h"
#include "app/gui/platform/window.h"
#include "app/gui/shell/shell.h"

#include <GLFW/glfw3.h>
#include <GL/gl.h>
#include <imgui.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace mnemo::app {

namespace {

struct BenchUiOptions {
  int frames = 600;
  int slots = 1024;
  int tokens = 512;
  int segments = 256;
  int change_every = 30;         // frames between new steps (every texture re-uploaded)
  int64_t dashboard_points = 0;  // > 0: `bench dashboard`: the training dashboard with four
                                 // curves of this many points over the live maps (no gallery)
};

// Times the texture uploads of another TextureApi (the report splits the frame time).
class TimedTextures : public ui::TextureApi {
 public:
  explicit TimedTextures(ui::TextureApi* inner) : inner_(inner) {}
  ImTextureID create(int w, int h, const uint8_t* rgba, bool smooth) override {
    const auto t0 = std::chrono::steady_clock::now();
    ImTextureID id = inner_->create(w, h, rgba, smooth);
    ms += bench::ms_since(t0);
    return id;
  }
  void update(ImTextureID id, int w, int h, const uint8_t* rgba) override {
    const auto t0 = std::chrono::steady_clock::now();
    inner_->update(id, w, h, rgba);
    ms += bench::ms_since(t0);
  }
  void destroy(ImTextureID id) override { inner_->destroy(id); }
  int max_size() const override { return inner_->max_size(); }
  double ms = 0.0;

 private:
  ui::TextureApi* inner_;
};

// `v` with synthetic slot effects of its shown step (app/figures/slot_effects.h): `entries`
// entries, each with an effect on every token the step predicts (what the worker publishes after
// "compute slot effects"; computing them runs on the model's thread, not timed here).
ViewPtr with_slot_effects(const ViewPtr& v, int entries) {
  auto m = std::make_shared<PublishedView>(*v);
  auto fx = std::make_shared<SlotEffects>();
  const TokenLosses& tl = v->step->token_losses;
  fx->segment = v->step->segment;
  fx->entry_kind = "slot";
  fx->ablations = {"reset", "zeroed"};
  for (size_t k = 0; k < tl.values.size(); ++k) {
    fx->tokens.push_back(tl.first + static_cast<int64_t>(k));
    fx->carried.push_back(2.f);
  }
  fx->removed.assign(2, {});
  fx->all_removed.assign(2, std::vector<float>(fx->tokens.size(), 2.5f));
  for (int e = 0; e < entries; ++e) {
    fx->labels.push_back("slot " + std::to_string(e));
    for (size_t a = 0; a < 2; ++a) {
      std::vector<float> r;
      for (size_t k = 0; k < fx->tokens.size(); ++k)
        r.push_back(2.f + 0.4f * std::sin(0.37f * static_cast<float>(e * 7 + static_cast<int>(k) + static_cast<int>(a))));
      fx->removed[a].push_back(std::move(r));
    }
  }
  m->slot_effects = fx;
  return m;
}

int run_bench_ui(const BenchUiOptions& o, std::ostream& out) {
  if (o.frames < 10 || o.slots < 1 || o.tokens < 1 || o.segments < 1 || o.change_every < 1)
    throw UsageError("bench ui: --frames >= 10 and every size >= 1");
  std::string why;
  if (!display_available(&why))
    throw UsageError("bench ui needs a display (" + why + "); run it as: xvfb-run -a -s \"-screen 0 1920x1080x24\" mnemoscope bench ui");
  // Two synthetic steps of the requested size; alternating them re-uploads every texture.
  SyntheticSpec spec;
  spec.slots = o.slots;
  spec.tokens = o.tokens;
  spec.visited = o.segments;
  spec.heads = 4;
  spec.dim = 64;
  ViewPtr a = make_synthetic_view(spec);
  spec.seed = 2;
  auto b_mut = std::make_shared<PublishedView>(*make_synthetic_view(spec));
  b_mut->info = a->info;  // same document: only the step and the timeline change
  b_mut->version = 2;
  b_mut->visited_version = 2;
  ViewPtr b = b_mut;

  Window w;
  if (!w.open(1920, 1080, "Mnemoscope bench ui", false, &why)) throw UsageError("bench ui: " + why);
  ImGuiIO& io = ImGui::GetIO();
  w.set_ini_path("");
  setup_style(1.f);
  const ui::UiFonts fonts = ui::load_fonts(15.f, 1.f);
  if (!w.start_backends(&why)) throw UsageError("bench ui: " + why);
  const std::string renderer = gl_renderer();
  auto gl_textures = std::make_unique<GlTextureApi>();
  auto textures = std::make_unique<TimedTextures>(gl_textures.get());
  const bool dash = o.dashboard_points > 0;
  // `bench ui` times two layouts in one run: the baseline (every panel once) and the
  // contender: provenance on (the Document tinted by a selected slot's provenance, the
  // timeline's "what the slot holds") and a second model side by side (every panel twice and
  // the writer attention's A - B).
  spec.seed = 3;
  ViewPtr other = dash ? nullptr : make_synthetic_view(spec);
  struct Run {
    const char* name;
    std::vector<double> ui_ms, frame_ms, change_ms, build_ms, upload_ms, submit_ms, cpu_ms;
  };
  std::vector<Run> runs;
  runs.push_back({dash ? "dashboard" : "baseline: every panel once", {}, {}, {}, {}, {}, {}, {}});
  if (!dash) runs.push_back({"provenance on + two models side by side", {}, {}, {}, {}, {}, {}, {}});
  if (!dash) runs.push_back({"memory benefit tint + a selected token's memory reads", {}, {}, {}, {}, {}, {}, {}});
  if (!dash) runs.push_back({"slot-effect tint, 32 entries", {}, {}, {}, {}, {}, {}, {}});
  const ViewPtr a_fx = dash ? nullptr : with_slot_effects(a, 32), b_fx = dash ? nullptr : with_slot_effects(b, 32);
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    Run& run = runs[ri];
    const bool contender = ri == 1, benefit = ri == 2, slot_effect = ri == 3;
  auto shell = std::make_unique<Shell>(textures.get(), fonts, nullptr, nullptr);
  if (dash) {
    const auto t0 = std::chrono::steady_clock::now();
    shell->dashboard().model().load_synthetic(4, o.dashboard_points);
    shell->set_panel_open(PanelId::kDashboard, true);
    out << "bench dashboard: 4 curves x " << o.dashboard_points << " points loaded in " << static_cast<int64_t>(bench::ms_since(t0))
        << " ms\n";
  } else {
    shell->set_panel_open(PanelId::kGallery, true);
    shell->gallery().set_size(GalleryPanel::size_count() - 1);  // the largest synthetic size
  }
  if (contender) {
    shell->document_panel().set_tint(DocumentPanel::kTintProvenance);
    shell->set_compare_labels("seed 1", "seed 3");
  }
  if (benefit) {
    // The Document tinted by what the memory saved on every visited token, and a token of the
    // shown segment selected: its reads over every slot, what they held outlined.
    shell->document_panel().set_tint(DocumentPanel::kTintBenefit);
    shell->document_panel().select_token(a->step->first_token + o.tokens / 2);
  }
  if (slot_effect) {
    shell->document_panel().set_tint(DocumentPanel::kTintSlotEffect);
    // The Slot effects panel beside it: the ranking and the entries x tokens matrix.
    for (const PanelDef& d : panel_registry())
      if (std::string(d.file_name) == "slot_effects") shell->set_panel_open(panel_id(d), true);
  }
  RecordingController control;

  std::vector<double>& ui_ms = run.ui_ms;
  std::vector<double>& frame_ms = run.frame_ms;
  std::vector<double>& change_ms = run.change_ms;
  std::vector<double>& build_ms = run.build_ms;
  std::vector<double>& upload_ms = run.upload_ms;
  std::vector<double>& submit_ms = run.submit_ms;
  std::vector<double>& cpu_ms = run.cpu_ms;
  const int warmup = 5;
  for (int f = 0; f < o.frames + warmup; ++f) {
    glfwPollEvents();
    const bool change = f % o.change_every == 0;
    const bool even = (f / o.change_every) % 2 == 0;
    const ViewPtr& s = slot_effect ? (even ? a_fx : b_fx) : (even ? a : b);
    if ((contender || slot_effect) && f == 1) shell->view_model().select_slot(slot_effect ? 5 : o.slots / 2);
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = bench::thread_cpu_ms();
    w.new_frame();
    // A mouse sweeping over the writer-attention map (or the dashboard's curves): hover
    // tests and tooltips every frame; the dashboard is also zoomed in and out by the wheel.
    if (dash) {
      io.MousePos = ImVec2(40.f + static_cast<float>((f * 11) % 1800), 640.f + static_cast<float>((f * 7) % 400));
      io.MouseWheel = f % 60 == 20 ? 1.f : (f % 60 == 50 ? -1.f : 0.f);
    } else {
      io.MousePos = ImVec2(560.f + static_cast<float>((f * 7) % 800), 120.f + static_cast<float>((f * 5) % 420));
    }
    textures->ms = 0.0;
    ImGui::NewFrame();
    shell->frame(s, control, contender ? other : nullptr);
    ImGui::Render();
    const double built = bench::ms_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    int fw = 0, fh = 0;
    w.render(&fw, &fh);
    const double submit = bench::ms_since(t1);
    const double ui = bench::ms_since(t0);
    const double cpu = bench::thread_cpu_ms() - c0;
    glFinish();
    const double total = bench::ms_since(t0);
    w.swap();
    if (f < warmup) continue;
    ui_ms.push_back(ui);
    cpu_ms.push_back(cpu);
    frame_ms.push_back(total);
    build_ms.push_back(built - textures->ms);
    upload_ms.push_back(textures->ms);
    submit_ms.push_back(submit);
    if (change) change_ms.push_back(ui);
  }
  shell.reset();
  }
  textures.reset();
  gl_textures.reset();

  char line[256];
  if (dash)
    out << "bench dashboard: " << o.frames << " frames at 1920x1080, training dashboard with 4 curves x "
        << o.dashboard_points << " points (NaN every 100,000) over the model panels, mouse hovering the curves\n";
  else
    out << "bench ui: " << o.frames << " frames at 1920x1080, all " << panel_count() << " panels open (gallery at "
        << GalleryPanel::size_name(GalleryPanel::size_count() - 1) << ")\n";
  out
      << "  writer map " << o.slots << " slots x " << (1 + o.tokens + 1) << " columns (self | " << o.tokens
      << " tokens | cls), 4 heads; memory " << o.slots << " x 64; timeline " << o.slots << " x " << o.segments
      << " segments\n"
      << "  a new step every " << o.change_every << " frames (every texture re-uploaded), mouse moving over the "
      << (dash ? "curves\n" : "writer map\n")
      << "  OpenGL renderer: " << renderer << "\n";
  if (!dash)
    out << "  contender: the Document tinted by slot " << o.slots / 2
        << "'s provenance (chain over the last 8 visited segments), the timeline listing what it holds, and a\n"
        << "  second synthetic model (seed 3) side by side: every panel twice, the writer attention's A - B beside\n"
        << "  benefit: the Document tinted by the memory benefit of every visited token, and token "
        << o.tokens / 2 << " of the shown segment selected (its reads over the " << o.slots << " slots, what they held outlined)\n"
        << "  slot effect: the Document tinted by slot 5's effect on the " << a_fx->slot_effects->tokens.size()
        << " tokens the shown step predicts (slot effects of 32 entries, published with the step), the Slot effects\n"
        << "  panel open beside it: the entries ranked and their 32 x " << a_fx->slot_effects->tokens.size()
        << " matrix (a new texture with every step)\n";
  if (!dash) {
    // What the benefit layout draws, so a run that drew nothing cannot pass for a cheap one.
    const MemoryReads reads = memory_reads(*a->step, a->visited, a->step->first_token + o.tokens / 2, 3);
    const TokenLossAt l = token_loss_at(a->visited, o.tokens, a->step->first_token + o.tokens / 2);
    std::snprintf(line, sizeof line,
                  "  benefit layout: the selected token read %d slots (top weight %.4f, %zu held tokens outlined), "
                  "memory saved %+.3f bits on it\n",
                  reads.entries_total, reads.empty() ? 0.f : reads.top[0].weight,
                  reads.empty() ? size_t{0} : reads.top[0].holds.size(), (l.loss_reset - l.loss) / std::log(2.f));
    out << line;
  }
  std::snprintf(line, sizeof line, "%-34s %9s %9s %9s\n", "", "p50 ms", "p99 ms", "max ms");
  out << line;
  auto row = [&](const char* name, const std::vector<double>& v) {
    std::snprintf(line, sizeof line, "%-34s %9.2f %9.2f %9.2f\n", name, bench::percentile(v, 0.5), bench::percentile(v, 0.99),
                  bench::percentile(v, 1.0));
    out << line;
  };
  for (const Run& run : runs) {
    if (runs.size() > 1) out << "-- " << run.name << "\n";
    row("UI work (build + upload + submit)", run.ui_ms);
    row("  the same as UI-thread CPU time", run.cpu_ms);
    row("  ImGui frame (panels, no uploads)", run.build_ms);
    row("  texture uploads", run.upload_ms);
    row("  draw-list submit (GL calls)", run.submit_ms);
    row("  step-change frames only", run.change_ms);
    row("frame incl. GL raster (glFinish)", run.frame_ms);
    const double p99 = bench::percentile(run.ui_ms, 0.99), p99_cpu = bench::percentile(run.cpu_ms, 0.99);
    std::snprintf(line, sizeof line, "goal: p99 of UI work <= 16.7 ms: %s (wall %.2f ms, UI-thread CPU %.2f ms)\n",
                  p99 <= 16.7 ? "met" : (p99_cpu <= 16.7 ? "met in CPU time, not in wall time (a loaded machine?)" : "NOT met"),
                  p99, p99_cpu);
    out << line;
  }
  for (size_t ri = 1; ri < runs.size(); ++ri) {
    std::snprintf(line, sizeof line,
                  "%s / baseline: UI work p50 %.2fx, p99 %.2fx; UI-thread CPU p50 %.2fx, p99 %.2fx\n",
                  ri == 1 ? "contender" : ri == 2 ? "benefit" : "slot effect",
                  bench::percentile(runs[ri].ui_ms, 0.5) / std::max(1e-9, bench::percentile(runs[0].ui_ms, 0.5)),
                  bench::percentile(runs[ri].ui_ms, 0.99) / std::max(1e-9, bench::percentile(runs[0].ui_ms, 0.99)),
                  bench::percentile(runs[ri].cpu_ms, 0.5) / std::max(1e-9, bench::percentile(runs[0].cpu_ms, 0.5)),
                  bench::percentile(runs[ri].cpu_ms, 0.99) / std::max(1e-9, bench::percentile(runs[0].cpu_ms, 0.99)));
    out << line;
  }
  out << bench::machine_line() << "\n";
  return 0;
}

class BenchUi : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("ui", "UI frame times: every panel open, 1024-slot x 512-token map (needs a display)");
    c->add_option("--frames", o_.frames, "frames to time (default 600)");
    c->add_option("--slots", o_.slots, "slots of the synthetic maps (default 1024)");
    c->add_option("--tokens", o_.tokens, "tokens per segment (default 512)");
    c->add_option("--segments", o_.segments, "visited segments in the timeline (default 256)");
    c->add_option("--change-every", o_.change_every, "frames between new steps (default 30)");
    return c;
  }
  int run(std::ostream& out) override { return run_bench_ui(o_, out); }

 private:
  BenchUiOptions o_;
};

class BenchDashboard : public Command {
 public:
  BenchDashboard() {
    o_.dashboard_points = 1000000;
    o_.slots = 64;
    o_.tokens = 128;
    o_.segments = 64;
  }
  CLI::App* add(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand(
        "dashboard", "dashboard frame times: four curves of 1,000,000 points each over the live maps (needs a display)");
    c->add_option("--frames", o_.frames, "frames to time (default 600)");
    c->add_option("--points", o_.dashboard_points, "points per curve (default 1000000)");
    c->add_option("--slots", o_.slots, "slots of the synthetic maps (default 64)");
    c->add_option("--tokens", o_.tokens, "tokens per segment of the maps (default 128)");
    return c;
  }
  int run(std::ostream& out) override {
    if (o_.dashboard_points < 1 || o_.dashboard_points > 100000000)
      throw UsageError("bench dashboard: --points must be in 1..100000000");
    return run_bench_ui(o_, out);
  }

 private:
  BenchUiOptions o_;
};

}  // namespace

std::unique_ptr<Command> make_bench_ui() { return std::make_unique<BenchUi>(); }
std::unique_ptr<Command> make_bench_dashboard() { return std::make_unique<BenchDashboard>(); }

}  // namespace mnemo::app
