// Gallery: every panel drawn on synthetic traces of a chosen size, with a line on what it
// shows. It is the living documentation of the panels and what the null-backend test draws.
#include "app/gui/panels/panels.h"
#include "app/gui/panels/registry.h"

#include "app/gui/model/synthetic.h"

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace mnemo::app {

namespace {

struct GallerySize {
  const char* name;
  int slots, tokens, visited;
};
const GallerySize kSizes[] = {
    {"16 slots x 32 tokens", 16, 32, 12},     {"1 slot x 1 token", 1, 1, 1},
    {"1 slot x 64 tokens", 1, 64, 4},         {"4 slots x 1 token", 4, 1, 6},
    {"64 slots x 128 tokens", 64, 128, 24},   {"1024 slots x 512 tokens", 1024, 512, 64},
};
constexpr int kSizeCount = static_cast<int>(sizeof kSizes / sizeof kSizes[0]);

}  // namespace

struct GalleryPanel::Impl {
  int size = 0;
  ViewPtr view;
  ViewModel vm;
  RecordingController control;
  Transport transport;
  ShellRequests requests;
  // The registry's gallery panels, in their order, each its own instance.
  std::vector<std::pair<const PanelDef*, std::unique_ptr<Panel>>> panels;
  std::shared_ptr<const StepData> synced;
};

GalleryPanel::GalleryPanel() : impl_(std::make_unique<Impl>()) {
  for (const PanelDef* d : gallery_panels()) impl_->panels.emplace_back(d, d->make());
}
GalleryPanel::~GalleryPanel() = default;
static_assert(!std::is_copy_constructible_v<GalleryPanel> && !std::is_copy_assignable_v<GalleryPanel>,
              "a copy would share impl_");
int GalleryPanel::size_count() { return kSizeCount; }
const char* GalleryPanel::size_name(int i) { return i >= 0 && i < kSizeCount ? kSizes[i].name : "?"; }

void GalleryPanel::set_size(int i) {
  if (i < 0 || i >= kSizeCount) return;
  if (i != impl_->size || !impl_->view) {
    impl_->size = i;
    impl_->view.reset();
  }
}

void GalleryPanel::draw(PanelContext& outer) {
  Impl& g = *impl_;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14.f);
  if (ImGui::BeginCombo("synthetic size", kSizes[g.size].name)) {
    for (int i = 0; i < kSizeCount; ++i)
      if (ImGui::Selectable(kSizes[i].name, i == g.size)) set_size(i);
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::TextDisabled("(synthetic traces, no model: every panel as it draws a real step)");
  if (!g.view) {
    SyntheticSpec spec;
    spec.slots = kSizes[g.size].slots;
    spec.tokens = kSizes[g.size].tokens;
    spec.visited = kSizes[g.size].visited;
    spec.heads = 4;
    spec.dim = spec.slots >= 1024 ? 64 : 32;
    spec.seed = 7 + static_cast<uint64_t>(g.size);
    spec.other_models = true;
    g.view = make_synthetic_view(spec);
  }
  if (g.view->step != g.synced) {
    g.synced = g.view->step;
    if (g.synced) g.vm.set_step(g.synced->memformer.slots, g.synced->memformer.self_mass);
  }

  PanelContext ctx{*g.view, g.vm, outer.textures, g.control, g.transport, g.requests, outer.mono, true};
  const float line = ImGui::GetTextLineHeightWithSpacing();
  ImGui::Separator();
  if (ImGui::BeginChild("##gallery_scroll", ImVec2(0, 0), false)) {
    for (auto& [def, panel] : g.panels) {
      const char* title = def->gallery_title ? def->gallery_title : def->title;
      ImGui::PushID(title);
      if (ImGui::CollapsingHeader(title, ImGuiTreeNodeFlags_DefaultOpen)) {
        ImGui::TextDisabled("%s", def->about);
        if (ImGui::BeginChild("##panel", ImVec2(0, def->gallery_lines * line), true)) panel->draw(ctx);
        ImGui::EndChild();
      }
      ImGui::PopID();
    }
  }
  ImGui::EndChild();
}

}  // namespace mnemo::app
