// The panel registry: one entry per panel (app/gui/panels/registry.h). Adding a panel is its
// file in app/gui/panels/ and an entry here (docs/architecture.md#adding-a-panel).
#include "app/gui/panels/registry.h"

#include "app/figures/attention.h"
#include "app/figures/benefit.h"
#include "app/figures/hash.h"
#include "app/figures/memformer.h"
#include "families/mtn/view/figures.h"
#include "app/figures/provenance.h"
#include "app/figures/slot_effects.h"
#include "app/gui/panels/dashboard.h"
#include "app/gui/panels/slot_effects_panel.h"
#include "app/figures/families.h"
#include "core/models/capabilities.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mnemo::app {

namespace {

std::string model_of(const PublishedView& s) { return s.info ? s.info->cfg.model : ""; }
const ModelCapabilities& caps(const PublishedView& s) { return capabilities_of(s.info->cfg.model); }
// Which panels draw the model's family (app/figures/families.h).
PanelFamily panels_of(const PublishedView& s) { return view_family(s.info->cfg.model).panels; }
bool no(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return false;
}

// Which models a panel applies to.
bool memformer_only(const PublishedView& s, std::string* why) {
  if (!s.info || panels_of(s) == PanelFamily::kMemformer) return true;
  return no(why, "A Memformer panel (writer attention, slots); this model is " + model_of(s) +
                     ". Start with --model memformer to see it.");
}
bool attention_models(const PublishedView& s, std::string* why) {
  if (s.info && panels_of(s) == PanelFamily::kAttention) return true;
  return no(why, s.info ? "Attention maps with memory blocks are drawn for rmt, rmt-write-only, trxl, trxl-rmt, transformer "
                          "and the MTN models; Memformer's is the Writer attention panel."
                        : "Open a document first.");
}
bool hashed_models(const PublishedView& s, std::string* why) {
  if (s.info && s.info->cfg.linear == "hashed") return true;
  return no(why, "Needs a model with hashed projections (MemoryFormer): start with --linear hashed, or set "
                 "\"linear\": \"hashed\" in the config.");
}
bool mtn_only(const PublishedView& s, std::string* why) {
  if (s.info && caps(s).memory == MemoryKind::kKeptTokens) return true;
  return no(why, "Kept tokens exist only in the Memory Transformer Network: start with --model mtn "
                 "(mtn-naive's memory is learned vectors, no-memory has none).");
}

bool memory_models(const PublishedView& s, std::string* why) {
  if (s.info && caps(s).memory != MemoryKind::kNone) return true;
  return no(why, s.info ? "The " + model_of(s) + " model has no memory: no entry to remove."
                        : "Open a document first.");
}

template <class P>
std::unique_ptr<Panel> make() {
  return std::make_unique<P>();
}

constexpr ImGuiWindowFlags kFills = ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse;  // maps that fill their window

// Export of each panel (the figure builders of app/figures/, as `step` and `export` use them).
void write_document(const PanelExport& e) {
  const PublishedView& v = e.view;
  write_token_losses(v.visited, *v.info->doc, v.info->segment_len, e.base, e.fm, e.out);
  // What the memory saved on each token the shown step predicts (the benefit tint's numbers;
  // nothing for a model without a memory, whose steps compute no reset losses).
  if (v.step) write_memory_benefit(*v.step, *v.info->doc, e.base + "_memory_benefit", e.fm, e.out);
  if (v.provenance && e.sel.selected_slot >= 0)
    write_provenance(*v.provenance, e.sel.selected_slot, *v.info->doc, v.info->segment_len,
                     e.base + "_provenance_slot" + std::to_string(e.sel.selected_slot), e.fm, e.out);
}
void write_writer(const PanelExport& e) {
  const int h = e.sel.head;
  write_writer_attention(*e.view.step, h, e.sel.selected_slot, e.base + (h < 0 ? "_mean" : "_head" + std::to_string(h)), e.fm,
                         e.out, e.sel.writer_vmin, e.sel.writer_vmax);
}
void write_types(const PanelExport& e) { write_slot_types(*e.view.step, e.sel.thresholds, e.base, e.fm, e.out); }
void write_forget(const PanelExport& e) { write_forgetting(*e.view.step, e.base, e.fm, e.out); }
void write_mem(const PanelExport& e) { write_memory(*e.view.step, e.sel.selected_slot, e.base, e.fm, e.out); }
void write_slot_timeline(const PanelExport& e) {
  const int slot = e.sel.selected_slot;
  write_timeline(e.view.visited, slot, e.base, e.fm, e.out);
  write_slot_holdings(e.view.visited, slot, *e.view.info->doc, e.base + "_holds_slot" + std::to_string(slot), e.fm, e.out);
}
void write_attention(const PanelExport& e) {
  const StepData& st = *e.view.step;
  const AttentionData& a = st.attention;
  if (a.empty()) return;
  const int li = e.sel.attn_layer >= 0 && e.sel.attn_layer < static_cast<int>(a.layers.size()) ? e.sel.attn_layer : 0;
  const int head = e.sel.attn_head >= 0 && e.sel.attn_head < a.heads ? e.sel.attn_head : -1;
  const int layer = a.layers[static_cast<size_t>(li)];
  write_attention_map(a, st.segment, li, head,
                      e.base + "_l" + std::to_string(layer) + (head < 0 ? "_mean" : "_head" + std::to_string(head)), e.fm, e.out,
                      0.f, e.sel.attn_vmax, st.train_step);
  write_attention_masses(a, st.segment, head, e.base + "_mass", e.fm, e.out, st.train_step);
}
void write_hash(const PanelExport& e) {
  const StepData& st = *e.view.step;
  write_hash_projection(st.hash, e.sel.hash_path, e.sel.hash_table, e.base, e.base + "_stats.csv",
                        "segment " + std::to_string(st.segment), e.fm, e.out);
}
void write_slot_fx(const PanelExport& e) {
  // The shown step's slot effects once computed (step --by-slot's slot_effects.*); else nothing.
  if (const SlotEffects* fx = SlotEffectsPanel::shown(e.view)) write_slot_effects(*fx, *e.view.info->doc, e.base, e.fm, e.out);
}
void write_mtn(const PanelExport& e) {
  write_mtn_memory(*e.view.step, *e.view.info->doc, e.base, e.base + "_document", e.base + "_importance", e.fm, e.out);
}

// Default layout (app/gui/shell/layout.h): Controls over Document on the left; Memformer:
// Writer attention over Slot timeline in the middle (Slot timeline | Hash buckets when
// hashed), Slot types, Forgetting, Memory on the right. Other models: Attention over the
// middle and right columns; with MTN memory, that in the middle and Attention on the right;
// Hash buckets take the right column (its lower part under MTN's Attention). Side by side of
// a Memformer and another family (hint.attention): the middle column holds Writer attention
// over Attention (beside them MTN memory and Hash buckets when shown), and the Slot timeline
// goes to the bottom of the right column. The Gallery and the Dashboard float in the middle.
//
// The lower middle of the mixed layout, shared by Attention, MTN memory and Hash buckets:
// the k-th of the shown ones.
PanelRect mixed_lower(const LayoutGrid& g, int k) {
  const int n = 1 + (g.hint.mtn ? 1 : 0) + (g.hint.hashed ? 1 : 0);
  const float top = std::round(g.s.y * 0.5f), w = std::floor(g.mid / static_cast<float>(n));
  const float x = g.left + w * static_cast<float>(k);
  return g.at(x, top, k + 1 == n ? g.mid - w * static_cast<float>(k) : w, g.s.y - top);
}
PanelRect place_controls(const LayoutGrid& g) { return g.at(0, 0, g.left, g.controls_h); }
PanelRect place_document(const LayoutGrid& g) { return g.at(0, g.controls_h, g.left, g.s.y - g.controls_h); }
PanelRect place_writer(const LayoutGrid& g) {
  return g.at(g.left, 0, g.mid, g.hint.attention ? std::round(g.s.y * 0.5f) : g.writer_h);
}
PanelRect place_timeline(const LayoutGrid& g) {
  if (g.hint.attention) {
    const float top = std::round(g.s.y * 0.72f);
    return g.at(g.left + g.mid, top, g.right, g.s.y - top);
  }
  return g.at(g.left, g.writer_h, g.hint.memformer && g.hint.hashed ? std::round(g.mid * 0.4f) : g.mid, g.s.y - g.writer_h);
}
// The mixed layout's right column: Slot types 0-25 %, Forgetting 25-45 %, Memory 45-72 %, Slot timeline below.
PanelRect place_types(const LayoutGrid& g) {
  return g.at(g.left + g.mid, 0, g.right, g.hint.attention ? std::round(g.s.y * 0.25f) : g.types_h);
}
PanelRect place_forgetting(const LayoutGrid& g) {
  if (g.hint.attention) {
    const float top = std::round(g.s.y * 0.25f);
    return g.at(g.left + g.mid, top, g.right, std::round(g.s.y * 0.45f) - top);
  }
  return g.at(g.left + g.mid, g.types_h, g.right, g.forget_h);
}
PanelRect place_memory(const LayoutGrid& g) {
  if (g.hint.attention) {
    const float top = std::round(g.s.y * 0.45f);
    return g.at(g.left + g.mid, top, g.right, std::round(g.s.y * 0.72f) - top);
  }
  return g.at(g.left + g.mid, g.types_h + g.forget_h, g.right, g.s.y - g.types_h - g.forget_h);
}
PanelRect place_attention(const LayoutGrid& g) {
  if (g.hint.attention) return mixed_lower(g, 0);
  if (g.hint.mtn)
    return g.hint.hashed ? g.at(g.left + g.mid, 0, g.right, std::round(g.s.y * 0.55f)) : g.at(g.left + g.mid, 0, g.right, g.s.y);
  return g.hint.hashed ? g.at(g.left, 0, g.mid, g.s.y) : g.at(g.left, 0, g.mid + g.right, g.s.y);
}
PanelRect place_mtn(const LayoutGrid& g) { return g.hint.attention ? mixed_lower(g, 1) : g.at(g.left, 0, g.mid, g.s.y); }
PanelRect place_hash(const LayoutGrid& g) {
  if (g.hint.attention) return mixed_lower(g, g.hint.mtn ? 2 : 1);
  if (g.hint.memformer) {
    const float tw = std::round(g.mid * 0.4f);
    return g.at(g.left + tw, g.writer_h, g.mid - tw, g.s.y - g.writer_h);
  }
  const float top = g.hint.mtn ? std::round(g.s.y * 0.55f) : 0.f;
  return g.at(g.left + g.mid, top, g.right, g.s.y - top);
}
PanelRect place_gallery(const LayoutGrid& g) {
  return g.at(std::round(g.s.x * 0.12f), std::round(g.s.y * 0.04f), std::round(g.s.x * 0.76f), std::round(g.s.y * 0.92f));
}
PanelRect place_slot_effects(const LayoutGrid& g) {
  return g.at(std::round(g.s.x * 0.55f), std::round(g.s.y * 0.10f), std::round(g.s.x * 0.40f), std::round(g.s.y * 0.60f));
}
PanelRect place_dashboard(const LayoutGrid& g) {
  return g.at(std::round(g.s.x * 0.08f), std::round(g.s.y * 0.06f), std::round(g.s.x * 0.84f), std::round(g.s.y * 0.88f));
}

std::vector<PanelDef> make_registry() {
  // clang-format off
  std::vector<PanelDef> r = {
    // title, file name, open, window flags, per model, applies, make, export, place,
    //   gallery: title, line, height (text lines), rank
    {"Controls", "all", true, 0, false, nullptr, make<ControlsPanel>, nullptr, place_controls,
     nullptr, "Step, play, jump, reset; the model config with Apply; checkpoint and document loading (disabled here).", 16.f, 10},
    {"Document", "document", true, 0, true, nullptr, make<DocumentPanel>, write_document, place_document,
     nullptr, "The text, one cell per token (underlined); current segment highlighted, visited ones tinted. Hover: id, bytes, loss.", 10.f, 9},
    {"Writer attention", "writer_attention", true, kFills, true, memformer_only, make<WriterAttentionPanel>, write_writer, place_writer,
     nullptr, "Each slot's attention over [itself | the segment's tokens | cls]; rows sum to 1. Hover for exact values.", 18.f, 1},
    {"Slot timeline", "slot_timeline", true, kFills, true, memformer_only, make<TimelinePanel>, write_slot_timeline, place_timeline,
     nullptr, "Self-attention mass per slot over visited segments: long bright rows hold information.", 16.f, 3},
    {"Slot types", "slot_types", true, 0, true, memformer_only, make<SlotTypesPanel>, write_types, place_types,
     nullptr, "Retain / mix / overwrite by self-attention mass; move the thresholds to re-classify.", 14.f, 2},
    {"Forgetting", "forgetting", true, 0, true, memformer_only, make<ForgettingPanel>, write_forget, place_forgetting,
     nullptr, "||v_bias|| per slot, sortable: larger pulls the slot harder towards its bias (faster forgetting).", 12.f, 4},
    {"Memory", "memory", true, kFills, true, memformer_only, make<MemoryPanel>, write_mem, place_memory,
     nullptr, "The memory after the step (slots x d) with per-slot norm and drift from the previous step.", 20.f, 5},
    {"Attention", "attention", true, kFills, true, attention_models, make<AttentionPanel>, write_attention, place_attention,
     "Attention (RMT, Transformer-XL, MTN)", "RMT: queries over [read | tokens | write], blocks outlined; reading / writing / rewriting per layer below.", 24.f, 6},
    {"MTN memory", "mtn_memory", true, 0, true, mtn_only, make<MtnMemoryPanel>, write_mtn, place_mtn,
     nullptr, "MTN's kept tokens: candidates' importance (kept outlined), entries with age, and the document.", 22.f, 8},
    {"Hash buckets", "hash", true, 0, true, hashed_models, make<HashBucketsPanel>, write_hash, place_hash,
     nullptr, "MemoryFormer tables of a projection: bucket loads, one table vs uniform, p(z), stats per table.", 26.f, 7},
    {"Training dashboard", "dashboard", false, 0, false, nullptr, make<DashboardPanel>, nullptr, place_dashboard,
     nullptr, "", 0.f, 0},
    {"Gallery", "gallery", false, 0, false, nullptr, make<GalleryPanel>, nullptr, place_gallery,
     nullptr, "", 0.f, 0},
    {"Slot effects", "slot_effects", false, 0, true, memory_models, make<SlotEffectsPanel>, write_slot_fx, place_slot_effects,
     nullptr, "", 0.f, 0},
  };
  // clang-format on
  // The named PanelIds are entries' places (tests/gui/test_registry.cpp checks them by file name).
  if (static_cast<int>(r.size()) <= static_cast<int>(PanelId::kGallery))
    throw std::logic_error("panel registry: fewer entries than named PanelIds");
  return r;
}

}  // namespace

const std::vector<PanelDef>& panel_registry() {
  static const std::vector<PanelDef> r = make_registry();
  return r;
}

int panel_count() { return static_cast<int>(panel_registry().size()); }

const PanelDef& panel_def(PanelId id) { return panel_registry().at(static_cast<size_t>(id)); }

PanelId panel_id(const PanelDef& d) {
  const auto& r = panel_registry();
  if (&d < r.data() || &d >= r.data() + r.size()) throw std::logic_error("panel_id: not an entry of the registry");
  return static_cast<PanelId>(&d - r.data());
}

std::vector<const PanelDef*> gallery_panels() {
  std::vector<const PanelDef*> out;
  for (const auto& d : panel_registry())
    if (d.gallery_rank > 0) out.push_back(&d);
  std::sort(out.begin(), out.end(), [](const PanelDef* a, const PanelDef* b) { return a->gallery_rank < b->gallery_rank; });
  return out;
}

const char* panel_title(PanelId id) { return panel_def(id).title; }
const char* panel_file_name(PanelId id) { return panel_def(id).file_name; }
bool panel_applies(PanelId id, const PublishedView& s, std::string* why) {
  const auto f = panel_def(id).applies;
  return f ? f(s, why) : true;
}

}  // namespace mnemo::app
