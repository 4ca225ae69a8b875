// The panel registry (app/gui/panels/registry.h): one entry per PanelId, each making its own
// panel type; tours, Export all, side by side and the gallery take their panels from it, and
// the shell draws every entry.
#ifdef MNEMO_WITH_GUI
#include "app/gui/panels/dashboard.h"
#include "app/gui/panels/registry.h"
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

#include <set>
#include <string>
#include <typeinfo>

using namespace mnemo;
using namespace mnemo::app;

namespace {
// The class each PanelId must be made as.
bool made_as_its_type(PanelId id, Panel* p) {
  switch (id) {
    case PanelId::kControls: return dynamic_cast<ControlsPanel*>(p) != nullptr;
    case PanelId::kDocument: return dynamic_cast<DocumentPanel*>(p) != nullptr;
    case PanelId::kWriterAttention: return dynamic_cast<WriterAttentionPanel*>(p) != nullptr;
    case PanelId::kSlotTypes: return dynamic_cast<SlotTypesPanel*>(p) != nullptr;
    case PanelId::kForgetting: return dynamic_cast<ForgettingPanel*>(p) != nullptr;
    case PanelId::kMemory: return dynamic_cast<MemoryPanel*>(p) != nullptr;
    case PanelId::kTimeline: return dynamic_cast<TimelinePanel*>(p) != nullptr;
    case PanelId::kGallery: return dynamic_cast<GalleryPanel*>(p) != nullptr;
    case PanelId::kAttention: return dynamic_cast<AttentionPanel*>(p) != nullptr;
    case PanelId::kHashBuckets: return dynamic_cast<HashBucketsPanel*>(p) != nullptr;
    case PanelId::kMtnMemory: return dynamic_cast<MtnMemoryPanel*>(p) != nullptr;
    case PanelId::kDashboard: return dynamic_cast<DashboardPanel*>(p) != nullptr;
  }
  return static_cast<int>(id) > static_cast<int>(PanelId::kGallery);  // a panel the shell does not name
}
}  // namespace

TEST_CASE("panel registry: a named PanelId is its entry's place - each makes its own type - unique titles and file names") {
  const auto& r = panel_registry();
  REQUIRE(static_cast<int>(r.size()) == panel_count());
  // Each PanelId the shell names is the entry with its file name.
  const std::pair<PanelId, std::string> named[] = {
      {PanelId::kControls, "all"},         {PanelId::kDocument, "document"},     {PanelId::kWriterAttention, "writer_attention"},
      {PanelId::kTimeline, "slot_timeline"}, {PanelId::kSlotTypes, "slot_types"}, {PanelId::kForgetting, "forgetting"},
      {PanelId::kMemory, "memory"},        {PanelId::kAttention, "attention"},   {PanelId::kMtnMemory, "mtn_memory"},
      {PanelId::kHashBuckets, "hash"},     {PanelId::kDashboard, "dashboard"},   {PanelId::kGallery, "gallery"}};
  for (const auto& [id, file] : named) {
    CAPTURE(file);
    CHECK(std::string(panel_def(id).file_name) == file);
  }
  std::set<int> ids;
  std::set<std::string> titles, files;
  for (const PanelDef& d : r) {
    CAPTURE(d.title);
    ids.insert(static_cast<int>(panel_id(d)));
    titles.insert(d.title);
    files.insert(d.file_name);
    CHECK(&panel_def(panel_id(d)) == &d);
    CHECK(std::string(panel_title(panel_id(d))) == d.title);
    CHECK(std::string(panel_file_name(panel_id(d))) == d.file_name);
    auto p = d.make();
    REQUIRE(p);
    CHECK(made_as_its_type(panel_id(d), p.get()));
    REQUIRE(static_cast<bool>(d.place));
    // A panel that draws a model's step exports it; Controls, Gallery and the Dashboard have
    // no figure of their own.
    CHECK(d.per_model == (d.write != nullptr));
  }
  CHECK(static_cast<int>(ids.size()) == panel_count());
  CHECK(titles.size() == r.size());
  CHECK(files.size() == r.size());
  // The View menu's order and defaults, as before the registry.
  CHECK(panel_id(r.front()) == PanelId::kControls);
  // Gallery is the last named panel; panels added since (Slot effects) follow it
  // (docs/architecture.md#adding-a-panel: a new panel goes at the end of the table).
  CHECK(static_cast<int>(PanelId::kGallery) == 11);
  CHECK(std::string(panel_file_name(PanelId::kGallery)) == "gallery");
  CHECK_FALSE(panel_def(PanelId::kGallery).open_by_default);
  CHECK_FALSE(panel_def(PanelId::kDashboard).open_by_default);
  CHECK(panel_def(PanelId::kWriterAttention).open_by_default);
}

TEST_CASE("panel registry: tour names are the per-model panels' file names and the gallery shows them in its order") {
  for (const PanelDef& d : panel_registry()) {
    CAPTURE(d.title);
    if (d.per_model) CHECK(panel_of_tour_name(d.file_name) == static_cast<int>(panel_id(d)));
  }
  CHECK(panel_of_tour_name("controls") == static_cast<int>(PanelId::kControls));
  CHECK(panel_of_tour_name("gallery") == -1);
  CHECK(panel_of_tour_name("dashboard") == -1);
  CHECK(panel_of_tour_name("nope") == -1);
  const auto g = gallery_panels();
  REQUIRE(g.size() == 10);  // every per-model panel and Controls
  CHECK(panel_id(*g.front()) == PanelId::kWriterAttention);
  CHECK(panel_id(*g.back()) == PanelId::kControls);
  for (size_t i = 1; i < g.size(); ++i) CHECK(g[i - 1]->gallery_rank < g[i]->gallery_rank);
  for (const PanelDef* d : g) CHECK(d->gallery_lines > 0.f);
}

TEST_CASE("panel registry: the shell opens a window for every open entry that applies") {
  ui::NullTextureApi textures;
  RecordingController control;
  test::NullImGui ui(1600.f, 1000.f);
  {
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    ViewPtr view = std::make_shared<PublishedView>();  // no document: the Memformer panels apply
    for (const PanelDef& d : panel_registry()) shell.set_panel_open(panel_id(d), true);
    for (int f = 0; f < 3; ++f) ui.frame(shell, view, control);
    for (const PanelDef& d : panel_registry()) {
      CAPTURE(d.title);
      ImGuiWindow* w = ImGui::FindWindowByName(d.title);
      CHECK((w != nullptr && w->Active) == panel_applies(panel_id(d), *view));
    }
  }
}
#endif
