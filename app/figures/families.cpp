// The app's family entries (app/figures/families.h). A family in a folder of its own
// (families/<name>/) is its folder's view entry, included below, and one line in
// make_view_families() (docs/architecture.md#adding-a-model); the decoder-only family's entry
// is written here.
#include "app/figures/families.h"

#include "app/figures/family_extract.h"
#include "core/models/family.h"
#include "core/trace/keys.h"
// The families in folders of their own (families/<name>/view/entry.h), one include each.
#include "families/memformer/view/entry.h"
#include "families/mtn/view/entry.h"

#include <stdexcept>

namespace mnemo::app {

namespace {

std::string all(const char* prefix) { return std::string(prefix) + "*"; }

// RMT's map over [read | tokens | write], the write-only RMT's over [previous write | ...],
// Transformer-XL + RMT's beside its cache map.
const char* decoder_map_title(const ModelCapabilities& c) {
  if (c.rmt_previous_write) return "RMT (write only)";
  if (c.memory == MemoryKind::kCacheAndTokens) return "Transformer-XL + RMT";
  return "RMT";
}

std::vector<ViewFamily> make_view_families() {
  std::vector<ViewFamily> v;
  v.push_back(memformer_view_family());  // families/memformer/view/entry.h
  {
    // The attention panel: RMT's maps with their block masses, Transformer-XL's cache map.
    ViewFamily f;
    f.family = "decoder-lm";
    f.map_title = decoder_map_title;
    f.view_keys = {all(keys::kRmtAttnPrefix), all(keys::kRmtBlockMassPrefix), all(keys::kTrxlAttnPrefix)};
    f.extract = extract_decoder_lm_step;
    v.push_back(f);
  }
  v.push_back(mtn_view_family());  // families/mtn/view/entry.h
  // One entry per core family, in its order: a family registered in core without its view
  // entry here is a programming error caught at the first use (and by tests/gui/test_registry.cpp).
  const auto& core = model_families();
  bool same = core.size() == v.size();
  for (size_t i = 0; same && i < v.size(); ++i) same = core[i].name == v[i].family;
  if (!same) throw std::logic_error("app/figures/families.cpp: the view entries do not match core/models/family.cpp's families");
  return v;
}

}  // namespace

const std::vector<ViewFamily>& view_families() {
  static const std::vector<ViewFamily> v = make_view_families();
  return v;
}

const ViewFamily* view_family_of(const std::string& model_kind) {
  if (!is_known_model(model_kind)) return nullptr;
  return &view_family(model_kind);
}

const ViewFamily& view_family(const std::string& model_kind) {
  const std::string& name = family_of(model_kind).name;  // throws for an unknown kind
  for (const ViewFamily& f : view_families())
    if (f.family == name) return f;
  throw std::logic_error("app/figures/families.cpp: no view entry for the " + name + " family");
}

std::string attention_map_title(const std::string& model_kind) {
  const ViewFamily* f = view_family_of(model_kind);
  return f && f->map_title ? f->map_title(capabilities_of(model_kind)) : "RMT";
}

}  // namespace mnemo::app
