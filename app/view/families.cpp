#include "app/view/families.h"

#include "core/models/family.h"

#include <stdexcept>

namespace mnemo::app {

namespace {

// RMT's map over [read | tokens | write], the write-only RMT's over [previous write | ...],
// Transformer-XL + RMT's beside its cache map.
const char* decoder_map_title(const ModelCapabilities& c) {
  if (c.rmt_previous_write) return "RMT (write only)";
  if (c.memory == MemoryKind::kCacheAndTokens) return "Transformer-XL + RMT";
  return "RMT";
}

std::vector<ViewFamily> make_view_families() {
  std::vector<ViewFamily> v;
  {
    ViewFamily f;
    f.family = "memformer";
    f.panels = PanelFamily::kMemformer;
    v.push_back(f);
  }
  {
    ViewFamily f;
    f.family = "decoder-lm";
    f.panels = PanelFamily::kAttention;
    f.map_title = decoder_map_title;
    v.push_back(f);
  }
  {
    ViewFamily f;
    f.family = "mtn";
    f.panels = PanelFamily::kAttention;
    v.push_back(f);
  }
  // One entry per core family, in its order: a family registered in core without its view
  // entry here is a programming error caught at the first use (and by tests/gui/test_registry.cpp).
  const auto& core = model_families();
  bool same = core.size() == v.size();
  for (size_t i = 0; same && i < v.size(); ++i) same = core[i].name == v[i].family;
  if (!same) throw std::logic_error("app/view/families.cpp: the view entries do not match core/models/family.cpp's families");
  return v;
}

}  // namespace

const std::vector<ViewFamily>& view_families() {
  static const std::vector<ViewFamily> v = make_view_families();
  return v;
}

const ViewFamily* view_family_of(const std::string& model_kind) {
  if (!is_known_model(model_kind)) return nullptr;
  const std::string& name = family_of(model_kind).name;
  for (const ViewFamily& f : view_families())
    if (f.family == name) return &f;
  return nullptr;
}

const ViewFamily& view_family(const std::string& model_kind) {
  const std::string& name = family_of(model_kind).name;  // throws for an unknown kind
  for (const ViewFamily& f : view_families())
    if (f.family == name) return f;
  throw std::logic_error("app/view/families.cpp: no view entry for the " + name + " family");
}

std::string attention_map_title(const std::string& model_kind) {
  const ViewFamily* f = view_family_of(model_kind);
  return f && f->map_title ? f->map_title(capabilities_of(model_kind)) : "RMT";
}

}  // namespace mnemo::app
