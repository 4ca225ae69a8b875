// Gallery: every panel drawn on synthetic traces of a chosen size, with a line on what it
// shows. It is the living documentation of the panels and what the null-backend test draws.
#include "app/gui/panels/panels.h"

#include "app/gui/model/synthetic.h"

#include <memory>
#include <type_traits>

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
  SessionPtr session;
  ViewModel vm;
  RecordingController control;
  Transport transport;
  ShellRequests requests;
  ControlsPanel controls;
  DocumentPanel document;
  WriterAttentionPanel writer;
  SlotTypesPanel types;
  ForgettingPanel forgetting;
  MemoryPanel memory;
  TimelinePanel timeline;
  AttentionPanel attention;
  HashBucketsPanel hash;
  MtnMemoryPanel mtn;
  std::shared_ptr<const StepData> synced;
};

GalleryPanel::GalleryPanel() : impl_(std::make_unique<Impl>()) {}
GalleryPanel::~GalleryPanel() = default;
static_assert(!std::is_copy_constructible_v<GalleryPanel> && !std::is_copy_assignable_v<GalleryPanel>,
              "a copy would share impl_");
int GalleryPanel::size_count() { return kSizeCount; }
const char* GalleryPanel::size_name(int i) { return i >= 0 && i < kSizeCount ? kSizes[i].name : "?"; }

void GalleryPanel::set_size(int i) {
  if (i < 0 || i >= kSizeCount) return;
  if (i != impl_->size || !impl_->session) {
    impl_->size = i;
    impl_->session.reset();
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
  if (!g.session) {
    SyntheticSpec spec;
    spec.slots = kSizes[g.size].slots;
    spec.tokens = kSizes[g.size].tokens;
    spec.visited = kSizes[g.size].visited;
    spec.heads = 4;
    spec.dim = spec.slots >= 1024 ? 64 : 32;
    spec.seed = 7 + static_cast<uint64_t>(g.size);
    spec.other_models = true;
    g.session = make_synthetic_session(spec);
  }
  if (g.session->step != g.synced) {
    g.synced = g.session->step;
    if (g.synced) g.vm.set_step(g.synced->slots, g.synced->self_mass);
  }

  PanelContext ctx{*g.session, g.vm, outer.textures, g.control, g.transport, g.requests, outer.mono, true};
  struct Entry {
    const char* title;
    const char* about;
    float height;
    void (*draw)(Impl&, PanelContext&);
  };
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const Entry entries[] = {
      {"Writer attention", "Each slot's attention over [itself | the segment's tokens | cls]; rows sum to 1. Hover for exact values.",
       18.f * line, [](Impl& i, PanelContext& c) { i.writer.draw(c); }},
      {"Slot types", "Retain / mix / overwrite by self-attention mass; move the thresholds to re-classify.", 14.f * line,
       [](Impl& i, PanelContext& c) { i.types.draw(c); }},
      {"Slot timeline", "Self-attention mass per slot over visited segments: long bright rows hold information.", 16.f * line,
       [](Impl& i, PanelContext& c) { i.timeline.draw(c); }},
      {"Forgetting", "||v_bias|| per slot, sortable: larger pulls the slot harder towards its bias (faster forgetting).",
       12.f * line, [](Impl& i, PanelContext& c) { i.forgetting.draw(c); }},
      {"Memory", "The memory after the step (slots x d) with per-slot norm and drift from the previous step.", 20.f * line,
       [](Impl& i, PanelContext& c) { i.memory.draw(c); }},
      {"Attention (RMT, Transformer-XL, MTN)",
       "RMT: queries over [read | tokens | write], blocks outlined; reading / writing / rewriting per layer below.",
       24.f * line, [](Impl& i, PanelContext& c) { i.attention.draw(c); }},
      {"Hash buckets", "MemoryFormer tables of a projection: bucket loads, one table vs uniform, p(z), stats per table.",
       26.f * line, [](Impl& i, PanelContext& c) { i.hash.draw(c); }},
      {"MTN memory", "MTN's kept tokens: candidates' importance (kept outlined), entries with age, and the document.",
       22.f * line, [](Impl& i, PanelContext& c) { i.mtn.draw(c); }},
      {"Document", "The text, one cell per token (underlined); current segment highlighted, visited ones tinted. Hover: id, bytes, loss.",
       10.f * line, [](Impl& i, PanelContext& c) { i.document.draw(c); }},
      {"Controls", "Step, play, jump, reset; the model config with Apply; checkpoint and document loading (disabled here).",
       16.f * line, [](Impl& i, PanelContext& c) { i.controls.draw(c); }},
  };

  ImGui::Separator();
  if (ImGui::BeginChild("##gallery_scroll", ImVec2(0, 0), false)) {
    for (const Entry& e : entries) {
      ImGui::PushID(e.title);
      if (ImGui::CollapsingHeader(e.title, ImGuiTreeNodeFlags_DefaultOpen)) {
        ImGui::TextDisabled("%s", e.about);
        if (ImGui::BeginChild("##panel", ImVec2(0, e.height), true)) e.draw(g, ctx);
        ImGui::EndChild();
      }
      ImGui::PopID();
    }
  }
  ImGui::EndChild();
}

}  // namespace mnemo::app
