// Slot effects in the app (docs/gui.md#slot-effects): the worker computes, on its own
// thread, what each memory entry did for the shown step's predictions — equal to
// segment_entry_effects of the same model and memory computed here — drops it when another
// step is shown, computes nothing for a model without memory; the Document panel's
// slot-effect tint draws it (null backend) and picks the selected, typed or most helpful entry.
// (tests/support/gui_test.h includes LibTorch before doctest: glog's CHECK clashes with doctest's.)
#include "tests/support/gui_test.h"  // helpers, doctest and, with the GUI, the null backend and wait_worker
#ifdef MNEMO_WITH_GUI
#include "app/gui/panels/registry.h"
#include "app/gui/panels/slot_effects_panel.h"
#include "core/engine/doc_score.h"
#include "core/models/factory.h"
#include "core/models/memory_entries.h"


#include <algorithm>
#include <cmath>
#include <map>

using namespace mnemo;
using namespace mnemo::app;

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
    test::wait_worker(w, 5);
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
      req.view = v;
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
    test::wait_worker(w, 6);
    CHECK(w.latest()->position == 3);
    CHECK_FALSE(w.latest()->slot_effects);
    CHECK_FALSE(SlotEffectsPanel::shown(*w.latest()));
  }
}

namespace {
// Keeps every uploaded image (create and update) so a test can read back what a panel drew.
class RecordingTextures : public ui::TextureApi {
 public:
  struct Image {
    int w = 0, h = 0;
    std::vector<uint8_t> rgba;
  };
  ImTextureID create(int w, int h, const uint8_t* rgba, bool) override {
    ++uploads_;
    ++live_;
    const intptr_t id = next_++;
    images[id] = {w, h, std::vector<uint8_t>(rgba, rgba + static_cast<size_t>(w) * static_cast<size_t>(h) * 4)};
    return reinterpret_cast<ImTextureID>(id);
  }
  void update(ImTextureID id, int w, int h, const uint8_t* rgba) override {
    ++uploads_;
    images[reinterpret_cast<intptr_t>(id)] = {w, h, std::vector<uint8_t>(rgba, rgba + static_cast<size_t>(w) * static_cast<size_t>(h) * 4)};
  }
  void destroy(ImTextureID id) override {
    --live_;
    images.erase(reinterpret_cast<intptr_t>(id));
  }
  int max_size() const override { return 16384; }
  std::map<intptr_t, Image> images;

 private:
  intptr_t next_ = 1;
};
}  // namespace

TEST_CASE("slot effects panel: the entries x tokens matrix drawn equals the effects - ranked rows, blue where an entry "
          "helped - hover names the cell's exact values - a click on a row selects its entry") {
  // Three slots over the four tokens segment 1's step predicts (document tokens 8..11): slot 0
  // hurt token 9 by 1 bit, slot 1 helped every token by 0.5 bits and token 10 by 3, slot 2 did nothing.
  const Document doc = make_document("The whale swam far.", "t.txt");
  PublishedView v;
  auto info = std::make_shared<ViewSource>();
  info->doc = std::make_shared<const Document>(doc);
  info->cfg.model = "memformer";
  v.info = info;
  auto step = std::make_shared<StepData>();
  step->segment = 1;
  v.step = step;
  auto fx = std::make_shared<SlotEffects>();
  fx->segment = 1;
  fx->entry_kind = "slot";
  fx->labels = {"slot 0", "slot 1", "slot 2"};
  fx->tokens = {8, 9, 10, 11};
  fx->carried = {1.f, 2.f, 0.5f, 1.5f};
  fx->ablations = {"reset"};
  const float ln2 = static_cast<float>(std::log(2.0));
  const std::vector<std::vector<float>> bits = {{0, -1, 0, 0}, {0.5f, 0.5f, 3.f, 0.5f}, {0, 0, 0, 0}};
  fx->removed.assign(1, {});
  for (const auto& row : bits) {
    std::vector<float> r;
    for (size_t k = 0; k < 4; ++k) r.push_back(fx->carried[k] + row[k] * ln2);
    fx->removed[0].push_back(r);
  }
  fx->all_removed = {{3.f, 3.f, 3.f, 3.f}};
  v.slot_effects = fx;
  // The rows as ranked by bits saved (slot 1: 4.5, slot 2: 0, slot 0: -1) and each cell
  // "bits with it - without it" = -bits on the symmetric scale of the largest |bits| (3).
  const std::vector<int> order = {1, 2, 0};
  std::vector<float> want;
  for (int e : order)
    for (size_t k = 0; k < 4; ++k) want.push_back(-bits[static_cast<size_t>(e)][k]);
  std::vector<uint8_t> want_rgba;
  int ww = 0, wh = 0;
  ui::heatmap_rgba(want.data(), 3, 4, -3.f, 3.f, ui::ColorLut(viz::Colormap::Diverging), 16384, &want_rgba, &ww, &wh);
  REQUIRE(ww == 4);
  REQUIRE(wh == 3);
  // Blue where an entry helped: slot 1's token 10 (row 0, column 2) is bluer than red.
  const uint8_t* helped = &want_rgba[(0 * 4 + 2) * 4];
  CHECK(helped[2] > helped[0]);
  const uint8_t* hurt = &want_rgba[(2 * 4 + 1) * 4];  // slot 0 on token 9
  CHECK(hurt[0] > hurt[2]);

  RecordingTextures textures;
  ViewModel vm;
  vm.set_step(3, {0.5f, 0.5f, 0.5f});
  RecordingController control;
  Transport transport;
  ShellRequests requests;
  SlotEffectsPanel panel;
  try {
    test::NullImGui ui(1000.f, 800.f);
    auto frame = [&] {
      ui.frame([&] {
        ImGui::SetNextWindowPos(ImVec2(0, 0));
        ImGui::SetNextWindowSize(ImVec2(900, 700));
        ImGui::Begin("Slot effects");
        PanelContext ctx{v, vm, textures, control, transport, requests};
        panel.draw(ctx);
        ImGui::End();
      });
    };
    ImGui::GetIO().MousePos = ImVec2(-1000, -1000);
    frame();
    // The matrix's texture: 4 tokens x 3 entries, its pixels those of the effects.
    const RecordingTextures::Image* img = nullptr;
    for (const auto& [id, im] : textures.images)
      if (im.w == 4 && im.h == 3) img = &im;
    REQUIRE(img);
    CHECK(img->rgba == want_rgba);
    // Hover the cell of row 0 (slot 1), token column 2 (document token 10), then click it.
    const ImVec2 lo = panel.matrix_min(), hi = panel.matrix_max();
    REQUIRE(hi.x > lo.x);
    REQUIRE(hi.y > lo.y);
    const ImVec2 cell(lo.x + (hi.x - lo.x) * (2.5f / 4.f), lo.y + (hi.y - lo.y) * (0.5f / 3.f));
    ImGui::GetIO().MousePos = cell;
    frame();
    frame();
    CHECK(panel.hovered_entry() == 1);
    CHECK(panel.hovered_token() == 2);
    CHECK(SlotEffectsPanel::cell_text(*fx, doc, 0, 1, 2) ==
          "slot 1, token 10 's' (removed = reset): 3.000 bits saved | 0.5 nats with it, 2.579 without");
    CHECK(vm.selected_slot() == -1);
    ImGui::GetIO().MouseDown[0] = true;
    frame();
    ImGui::GetIO().MouseDown[0] = false;
    frame();
    CHECK(vm.selected_slot() == 1);
    // Row 2 (slot 0, which hurt): its entry is the one selected by a click there.
    ImGui::GetIO().MousePos = ImVec2(cell.x, lo.y + (hi.y - lo.y) * (2.5f / 3.f));
    frame();
    CHECK(panel.hovered_entry() == 0);
    ImGui::GetIO().MouseDown[0] = true;
    frame();
    ImGui::GetIO().MouseDown[0] = false;
    frame();
    CHECK(vm.selected_slot() == 0);
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

TEST_CASE("attention panel: a click on a memory token's column selects that entry - RMT read and write, MTN memory - "
          "token and cache columns select nothing") {
  // An RMT step: 3 tokens attending over [read r0 r1 | 3 tokens | write w0 w1].
  AttentionData a;
  a.kind = "RMT";
  a.layers = {0};
  a.heads = 1;
  a.rows = 3;
  a.cols = 7;
  a.values.assign(static_cast<size_t>(2 * 3 * 7), 1.f / 7.f);
  a.block_max = {1.f / 7.f, 1.f / 7.f};
  a.row_labels = {"a", "b", "c"};
  a.col_labels = {"r0", "r1", "a", "b", "c", "w0", "w1"};
  a.row_token = {10, 11, 12};
  a.col_token = {-1, -1, 10, 11, 12, -1, -1};
  a.row_blocks = {{0, 3, "tokens"}};
  a.col_blocks = {{0, 2, "read"}, {2, 3, "tokens"}, {5, 2, "write"}};
  const std::vector<int> want = {0, 1, -1, -1, -1, 0, 1};
  for (int c = 0; c < 7; ++c) CHECK(AttentionPanel::entry_of_column(a, c, 3) == want[static_cast<size_t>(c)]);
  CHECK(AttentionPanel::entry_of_column(a, 7, 3) == -1);
  // MTN: [memory | chunk | write]: the kept entries select, its write tokens do not.
  AttentionData mtn = a;
  mtn.col_blocks = {{0, 2, "memory"}, {2, 3, "chunk"}, {5, 2, "write"}};
  CHECK(AttentionPanel::entry_of_column(mtn, 1, 3) == 1);
  CHECK(AttentionPanel::entry_of_column(mtn, 5, 3) == -1);
  // Transformer-XL: a cache position selects its cache block. A cache of 4 positions stepped
  // in segments of 3: block 1 is the newest 3 (columns 1..3), block 0 the oldest 1 (column 0),
  // as memory_entries numbers them ("cache block 0 (positions 0..0)").
  AttentionData trxl = a;
  trxl.col_blocks = {{0, 4, "cache"}, {4, 3, "tokens"}};
  const std::vector<int> want_trxl = {0, 1, 1, 1, -1, -1, -1};
  for (int c = 0; c < 7; ++c) CHECK(AttentionPanel::entry_of_column(trxl, c, 3) == want_trxl[static_cast<size_t>(c)]);
  for (int c = 0; c < 7; ++c) CHECK(AttentionPanel::entry_of_column(trxl, c, 0) == -1);  // no segment length known
  // Transformer-XL + RMT: the memory tokens are entries 0..1, the cache blocks follow.
  AttentionData trxl_rmt = a;
  trxl_rmt.cols = 9;
  trxl_rmt.col_blocks = {{0, 4, "cache"}, {4, 2, "read"}, {6, 3, "tokens"}};
  const std::vector<int> want_mixed = {2, 3, 3, 3, 0, 1, -1, -1, -1};
  for (int c = 0; c < 9; ++c) CHECK(AttentionPanel::entry_of_column(trxl_rmt, c, 3) == want_mixed[static_cast<size_t>(c)]);

  PublishedView v;
  auto info = std::make_shared<ViewSource>();
  info->doc = std::make_shared<const Document>(make_document("The whale swam far.", "t.txt"));
  info->cfg.model = "rmt";
  v.info = info;
  auto step = std::make_shared<StepData>();
  step->segment = 1;
  step->first_token = 10;
  step->attention = a;
  v.step = step;
  ui::NullTextureApi textures;
  ViewModel vm;
  vm.set_step(2, {});
  RecordingController control;
  Transport transport;
  ShellRequests requests;
  AttentionPanel panel;
  try {
    test::NullImGui ui(1000.f, 800.f);
    auto frame = [&] {
      ui.frame([&] {
        ImGui::SetNextWindowPos(ImVec2(0, 0));
        ImGui::SetNextWindowSize(ImVec2(900, 700));
        ImGui::Begin("Attention");
        PanelContext ctx{v, vm, textures, control, transport, requests};
        panel.draw(ctx);
        ImGui::End();
      });
    };
    auto click_column = [&](int c, int r) {
      const ImVec2 lo = panel.map_min(), hi = panel.map_max();
      REQUIRE(hi.x > lo.x);
      ImGui::GetIO().MousePos = ImVec2(lo.x + (hi.x - lo.x) * ((static_cast<float>(c) + 0.5f) / 7.f),
                                       lo.y + (hi.y - lo.y) * ((static_cast<float>(r) + 0.5f) / 3.f));
      frame();
      ImGui::GetIO().MouseDown[0] = true;
      frame();
      ImGui::GetIO().MouseDown[0] = false;
      frame();
    };
    ImGui::GetIO().MousePos = ImVec2(-1000, -1000);
    frame();
    click_column(6, 0);  // w1: the memory token written
    CHECK(vm.selected_slot() == 1);
    click_column(3, 1);  // a token: the selection stays
    CHECK(vm.selected_slot() == 1);
    click_column(0, 2);  // r0: the memory token read
    CHECK(vm.selected_slot() == 0);
    click_column(0, 2);  // again: cleared
    CHECK(vm.selected_slot() == -1);
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

TEST_CASE("slot effects: Transformer-XL's cache blocks become selectable once computed - the Slot effects panel's row "
          "and the Document tint then follow the selected block") {
  const std::string sample = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  ModelConfig cfg = test::tiny_decoder("trxl", 3, 16);
  cfg.slots = 40;  // a cache of 40 positions: blocks of 16, the oldest of 8
  Worker w;
  w.start(sample, cfg, 3, "");
  for (int i = 0; i < 3; ++i) w.step(+1);
  test::wait_worker(w, 4);
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1600.f, 1000.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    ViewPtr v = w.latest();
    REQUIRE(v->step);
    REQUIRE(v->step->memformer.slots == 0);
    ui.frame(shell, v, control);
    shell.view_model().select_slot(2);
    CHECK(shell.view_model().selected_slot() == -1);  // no entries known before the effects
    w.compute_slot_effects();
    test::wait_worker(w, 5);
    v = w.latest();
    REQUIRE(v->slot_effects);
    REQUIRE(v->slot_effects->entries() == 3);
    ui.frame(shell, v, control);
    shell.view_model().select_slot(2);
    CHECK(shell.view_model().selected_slot() == 2);
    CHECK(DocumentPanel::effect_entry(*v->slot_effects, shell.view_model().selected_slot(), -1) == 2);
    ui.frame(shell, v, control);
    CHECK(shell.view_model().selected_slot() == 2);  // kept while the same effects are shown
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

TEST_CASE("attention panel: a click on a Transformer-XL cache column selects its cache block once the slot effects are "
          "computed - the Document's slot-effect tint then shows that block") {
  const std::string sample = std::string(MNEMO_SOURCE_DIR) + "/assets/sample.txt";
  ModelConfig cfg = test::tiny_decoder("trxl", 3, 16);
  cfg.slots = 40;  // a cache of 40 positions: blocks 0 (positions 0..7), 1 (8..23), 2 (24..39)
  Worker w;
  w.start(sample, cfg, 3, "");
  for (int i = 0; i < 3; ++i) w.step(+1);
  test::wait_worker(w, 4);
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1600.f, 1000.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    ViewPtr v = w.latest();
    REQUIRE(v->step);
    const AttentionData& a = v->step->attention;
    REQUIRE(a.col_blocks.size() == 2);
    REQUIRE(a.col_blocks[0].name == "cache");
    REQUIRE(a.col_blocks[0].count == 40);
    auto frame = [&] { ui.frame(shell, v, control); };
    auto click_column = [&](int c) {
      const ImVec2 lo = shell.attention().map_min(), hi = shell.attention().map_max();
      REQUIRE(hi.x > lo.x);
      REQUIRE(hi.y > lo.y);
      ImGui::GetIO().MousePos = ImVec2(lo.x + (hi.x - lo.x) * ((static_cast<float>(c) + 0.5f) / static_cast<float>(a.cols)),
                                       lo.y + (hi.y - lo.y) * 0.5f);
      frame();
      ImGui::GetIO().MouseDown[0] = true;
      frame();
      ImGui::GetIO().MouseDown[0] = false;
      frame();
    };
    ImGui::GetIO().MousePos = ImVec2(-1000, -1000);
    frame();
    frame();
    // Before the effects: the cache blocks are not entries yet, a click selects nothing.
    click_column(30);
    CHECK(shell.view_model().selected_slot() == -1);
    w.compute_slot_effects();
    test::wait_worker(w, 5);
    v = w.latest();
    REQUIRE(v->slot_effects);
    REQUIRE(v->slot_effects->entries() == 3);
    const SlotEffects& fx = *v->slot_effects;
    CHECK(fx.labels[2] == "cache block 2 (positions 24..39)");
    shell.document_panel().set_tint(DocumentPanel::kTintSlotEffect);
    frame();
    // Position k of the cache is block 0 for k < 8, 1 for k < 24, else 2 (the newest segment).
    const std::vector<std::pair<int, int>> clicks = {{30, 2}, {39, 2}, {12, 1}, {24, 2}, {23, 1}, {3, 0}, {7, 0}, {8, 1}};
    for (const auto& [col, block] : clicks) {
      CAPTURE(col);
      click_column(col);
      REQUIRE(shell.view_model().selected_slot() == block);
      // The Document's slot-effect tint shows the selected entry's effect: that block's.
      CHECK(DocumentPanel::effect_entry(fx, shell.view_model().selected_slot(), -1) == block);
      click_column(col);  // again: cleared
      CHECK(shell.view_model().selected_slot() == -1);
    }
    // A token column selects nothing.
    click_column(a.cols - 1);
    CHECK(shell.view_model().selected_slot() == -1);
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

#endif
