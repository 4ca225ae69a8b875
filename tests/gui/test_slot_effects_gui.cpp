// Slot effects in the app (docs/gui.md#slot-effects): the worker computes, on its own
// thread, what each memory entry did for the shown step's predictions — equal to
// segment_entry_effects of the same model and memory computed here — drops it when another
// step is shown, computes nothing for a model without memory; the Document panel's
// slot-effect tint draws it (null backend) and picks the selected, typed or most helpful entry.
// (LibTorch and core headers before doctest: glog's CHECK clashes with doctest's.)
#ifdef MNEMO_WITH_GUI
#include "app/gui/model/worker.h"
#include "app/gui/panels/registry.h"
#include "app/gui/panels/slot_effects_panel.h"
#include "app/gui/shell/export.h"
#include "app/gui/shell/shell.h"
#include "core/engine/doc_score.h"
#include "core/models/factory.h"
#include "core/models/memory_entries.h"
#endif
#include "tests/support/helpers.h"
#ifdef MNEMO_WITH_GUI
#include "tests/support/null_imgui.h"
#endif

#include <doctest/doctest.h>

#ifdef MNEMO_WITH_GUI
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

using namespace mnemo;
using namespace mnemo::app;

namespace {
void wait_until(Worker& w, int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  while ((w.finished() < n || w.busy()) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(w.finished() >= n);
}
}  // namespace

TEST_CASE("slot effects in the app: the worker's equal segment_entry_effects of the shown step, per family - dropped on "
          "the next step - none without memory - the Document tint draws them") {
  const std::string sample = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  const Document doc = load_document(sample);
  for (const std::string kind : {"memformer", "rmt", "trxl", "transformer"}) {
    CAPTURE(kind);
    ModelConfig cfg = kind == "memformer" ? test::tiny_memformer(4, 16) : test::tiny_decoder(kind, 3, 16);
    if (kind == "trxl") cfg.slots = 40;  // a cache of 40 positions: blocks of 16, the oldest of 8
    Worker w;
    w.start(sample, cfg, 3, "");
    for (int i = 0; i < 3; ++i) w.step(+1);
    w.compute_slot_effects();
    wait_until(w, 5);
    ViewPtr v = w.latest();
    REQUIRE(v->step);
    CHECK(v->position == 2);
    CHECK(w.take_errors().empty());
    if (kind == "transformer") {
      CHECK_FALSE(v->slot_effects);
      continue;
    }
    REQUIRE(v->slot_effects);
    const SlotEffects& fx = *v->slot_effects;
    CHECK(fx.segment == 2);
    CHECK(fx.ablations == std::vector<std::string>{"reset", "zeroed"});
    // Independently: the same model (config and seed), stepped here to the same memory.
    auto model = make_model(cfg, 3);
    model->eval();
    const MemoryState init = model->initial_memory(1);
    MemoryState mem = init;
    {
      c10::InferenceMode g;
      Segmenter seg(&doc, 16);
      for (int64_t i = 0; i < 2; ++i) mem = model->step(document_segment_input(seg, i, *model), mem, nullptr).memory;
    }
    const MemoryEntries en = memory_entries(model->capabilities(), init, 16);
    CHECK(fx.entries() == en.count());
    CHECK(fx.entries() == (kind == "trxl" ? 3 : kind == "memformer" ? 4 : 3));
    const SegmentEntryEffects want =
        segment_entry_effects(*model, doc, 16, 2, mem, init, en, {MemoryAblation::kReset, MemoryAblation::kZeroed});
    REQUIRE(fx.tokens == want.tokens);
    for (size_t a = 0; a < 2; ++a)
      for (int64_t e = 0; e < fx.entries(); ++e) {
        CAPTURE(e);
        CHECK(fx.entry_bits(a, e) == doctest::Approx(want.bits_saved(a, e)).epsilon(1e-4).scale(1e-4));
      }
    // The Document panel's tint: the selected entry, else the typed one, else the most helpful.
    CHECK(DocumentPanel::effect_entry(fx, 1, -1) == 1);
    CHECK(DocumentPanel::effect_entry(fx, 99, 2) == 2);
    CHECK(DocumentPanel::effect_entry(fx, -1, -1) == fx.ranking(0).front());
    ui::NullTextureApi textures;
    RecordingController control;
    try {
      test::NullImGui ui(1600.f, 1000.f);
      Shell shell(&textures, ui.fonts, nullptr, nullptr);
      // The "Slot effects" panel (View menu) open beside the tint.
      const auto& reg = panel_registry();
      const auto it = std::find_if(reg.begin(), reg.end(), [](const PanelDef& d) { return std::string(d.file_name) == "slot_effects"; });
      REQUIRE(it != reg.end());
      shell.set_panel_open(panel_id(*it), true);
      CHECK(SlotEffectsPanel::shown(*v) == v->slot_effects.get());
      for (int f = 0; f < 100; ++f) {
        ImGui::GetIO().MousePos = ImVec2(static_cast<float>(20 + (f * 53) % 480), static_cast<float>(300 + (f * 37) % 600));
        if (f == 5) shell.view_model().select_slot(static_cast<int>(fx.entries()) - 1);
        if (f == 50) shell.view_model().select_slot(-1);
        ui.frame([&] {
          if (f == 0) shell.document_panel().set_tint(DocumentPanel::kTintSlotEffect);
          shell.frame(v, control);
        });
      }
      CHECK(shell.document_panel().tint() == DocumentPanel::kTintSlotEffect);
    } catch (const test::ImGuiAssertFailure& e) {
      ImGui::SetCurrentContext(nullptr);
      FAIL(e.what());
    }
    // Export of the Slot effects panel: step --by-slot's figure and CSV of the shown step.
    {
      const auto& reg = panel_registry();
      const auto it = std::find_if(reg.begin(), reg.end(), [](const PanelDef& d) { return std::string(d.file_name) == "slot_effects"; });
      ExportRequest req;
      req.session = v;
      req.panel = panel_id(*it);
      req.dir = test::temp_dir("slot-fx-export-" + kind);
      const auto paths = export_panel(req);
      CHECK(test::file_exists(req.dir + "/seg-0002-slot_effects.png"));
      const std::string csv = test::read_file(req.dir + "/seg-0002-slot_effects.csv");
      CHECK(csv.find("entry,label,token,byte,nats_carried,nats_reset,bits_saved_reset,nats_zeroed,bits_saved_zeroed") == 0);
      CHECK(static_cast<int64_t>(std::count(csv.begin(), csv.end(), '\n')) ==
            1 + fx.entries() * static_cast<int64_t>(fx.tokens.size()));
    }
    // The next step drops them (they were the shown step's).
    w.step(+1);
    wait_until(w, 6);
    CHECK(w.latest()->position == 3);
    CHECK_FALSE(w.latest()->slot_effects);
    CHECK_FALSE(SlotEffectsPanel::shown(*w.latest()));
  }
}

#endif
