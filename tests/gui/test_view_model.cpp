// app/gui/model/view_model: slot selection shared by every panel and slot-type thresholds that
// re-classify at once — tested as plain C++ (no ImGui, no pixels).
#include "app/gui/model/model_fields.h"
#include "app/gui/model/view_model.h"
#include "core/trace/analysis.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

using namespace mnemo;
using namespace mnemo::app;

TEST_CASE("gui view model: one selection, linked across panels, cleared when the slot disappears") {
  ViewModel vm;
  vm.set_step(8, std::vector<float>(8, 0.5f));
  CHECK(vm.selected_slot() == -1);
  const uint64_t v0 = vm.selection_version();

  // A click in the writer-attention heatmap (row 3) ...
  vm.toggle_slot(3);
  // ... is what every other panel sees: the forgetting table, the strip, the timeline.
  CHECK(vm.selected_slot() == 3);
  CHECK(vm.is_selected(3));
  CHECK_FALSE(vm.is_selected(2));
  CHECK(vm.selection_version() == v0 + 1);

  // Selecting another slot elsewhere (a table row) moves the one selection.
  vm.select_slot(5);
  CHECK(vm.selected_slot() == 5);
  CHECK_FALSE(vm.is_selected(3));
  // Selecting the same slot again changes nothing (no scroll jump in the tables).
  const uint64_t v1 = vm.selection_version();
  vm.select_slot(5);
  CHECK(vm.selection_version() == v1);
  // Clicking the selected slot again clears the selection.
  vm.toggle_slot(5);
  CHECK(vm.selected_slot() == -1);

  // Out of range never selects.
  vm.select_slot(8);
  CHECK(vm.selected_slot() == -1);
  vm.select_slot(-4);
  CHECK(vm.selected_slot() == -1);

  // A new step with the same slots keeps the selection; fewer slots drop it.
  vm.select_slot(7);
  vm.set_step(8, std::vector<float>(8, 0.2f));
  CHECK(vm.selected_slot() == 7);
  vm.set_step(4, std::vector<float>(4, 0.2f));
  CHECK(vm.selected_slot() == -1);
}

TEST_CASE("gui view model: moving a threshold re-classifies immediately, as core does") {
  const std::vector<float> mass = {0.95f, 0.90f, 0.89f, 0.5f, 0.11f, 0.10f, 0.02f, NAN};
  ViewModel vm;
  vm.set_step(static_cast<int>(mass.size()), mass);
  // Compared as ints (glog's container printing needs operator<< for the elements).
  auto core_types = [&](const SlotThresholds& th) {
    auto t = classify_self_mass(torch::tensor(std::vector<float>(mass.begin(), mass.end())), th);
    std::vector<int> out;
    for (int64_t i = 0; i < t.size(0); ++i) out.push_back(t[i].item<int8_t>());
    return out;
  };
  auto vm_types = [&] {
    std::vector<int> out;
    for (SlotType t : vm.slot_types()) out.push_back(static_cast<int>(t));
    return out;
  };
  // Default thresholds 0.9 / 0.1: retain 2, overwrite 2, mix 4 (NaN counts as mix).
  CHECK(vm.counts().retain == 2);
  CHECK(vm.counts().overwrite == 2);
  CHECK(vm.counts().mix == 4);
  CHECK(vm_types() == core_types(vm.thresholds()));

  const uint64_t tv = vm.types_version();
  vm.set_retain_min(0.5f);
  CHECK(vm.types_version() > tv);  // the strip texture re-uploads
  CHECK(vm.counts().retain == 4);
  CHECK(vm.slot_types()[3] == SlotType::kRetain);
  CHECK(vm_types() == core_types(vm.thresholds()));

  vm.set_overwrite_max(0.3f);
  CHECK(vm.counts().overwrite == 3);
  CHECK(vm_types() == core_types(vm.thresholds()));

  // Dragging overwrite past retain drags retain along (core rejects overwrite > retain).
  vm.set_overwrite_max(0.7f);
  CHECK(vm.thresholds().overwrite_max == doctest::Approx(0.7f));
  CHECK(vm.thresholds().retain_min == doctest::Approx(0.7f));
  CHECK_NOTHROW(validate_thresholds(vm.thresholds()));
  CHECK(vm_types() == core_types(vm.thresholds()));
  vm.set_retain_min(0.2f);
  CHECK(vm.thresholds().overwrite_max == doctest::Approx(0.2f));
  CHECK(vm_types() == core_types(vm.thresholds()));

  // Out-of-range and non-finite values are clamped or ignored, never stored.
  vm.set_retain_min(3.f);
  CHECK(vm.thresholds().retain_min == 1.f);
  vm.set_overwrite_max(-1.f);
  CHECK(vm.thresholds().overwrite_max == 0.f);
  SlotThresholds bad{NAN, NAN};
  vm.set_thresholds(bad);
  CHECK(vm.thresholds().retain_min == 1.f);
  CHECK_NOTHROW(validate_thresholds(vm.thresholds()));

  // Setting the same thresholds again does not re-classify (no needless texture upload).
  const uint64_t tv2 = vm.types_version();
  vm.set_thresholds(vm.thresholds());
  CHECK(vm.types_version() == tv2);
}

TEST_CASE("gui view model: sorted tables map rows to slots, and a row click selects that slot") {
  const std::vector<float> norms = {0.3f, 1.7f, NAN, 0.9f, 1.7f};
  CHECK(sorted_slots(norms, SortOrder::kSlot) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(sorted_slots(norms, SortOrder::kValueAscending) == std::vector<int>{0, 3, 1, 4, 2});
  CHECK(sorted_slots(norms, SortOrder::kValueDescending) == std::vector<int>{1, 4, 3, 0, 2});
  ViewModel vm;
  vm.set_step(5, std::vector<float>(5, 0.5f));
  auto rows = sorted_slots(norms, SortOrder::kValueDescending);
  vm.toggle_slot(rows[2]);  // third row of the forgetting table sorted by ||v_bias|| descending
  CHECK(vm.selected_slot() == 3);
  CHECK(sorted_slots({}, SortOrder::kValueAscending).empty());
}

TEST_CASE("gui view model: head selection falls back to the mean when out of range") {
  ViewModel vm;
  CHECK(vm.head() == -1);
  vm.set_head(2, 4);
  CHECK(vm.head() == 2);
  vm.set_head(4, 4);
  CHECK(vm.head() == -1);
  vm.set_head(0, 0);
  CHECK(vm.head() == -1);
}

TEST_CASE("gui Model panel: the config fields it has no control for are named, per model kind") {
  ModelConfig mf;  // the defaults: a Memformer, d 64, ff 0 = 4d
  CHECK(other_model_fields(mf) == "ff 256; 1 cls token; memory read at scale unit; linear dense");
  // The twin without memory must not look like the model with one.
  mf.memory = false;
  CHECK(other_model_fields(mf) == "ff 256; 1 cls token; memory off: the \"w/o memory\" ablation (no read, no writer); linear dense");
  mf.memory = true;
  mf.memory_scale = "sqrt_dim";
  mf.memory_gate = true;
  mf.n_cls = 2;
  mf.ff = 100;
  CHECK(other_model_fields(mf) == "ff 100; 2 cls tokens; memory read at scale sqrt_dim, through a learnt gate; linear dense");

  ModelConfig rmt;
  rmt.model = "rmt";
  rmt.linear = "hashed";
  rmt.hash_bits = 4;
  rmt.hash_temperature = 0.5;
  // No Memformer fields for RMT, and the hashing parameters with a hashed Linear.
  CHECK(other_model_fields(rmt) == "ff 256; linear hashed (4 bits a chunk, temperature 0.5)");

  ModelConfig tr;
  tr.model = "trxl-rmt";
  tr.segment_len = 24;
  CHECK(other_model_fields(tr) == "ff 256; cache 24; linear dense");  // cache_len -1 = segment_len
  tr.cache_len = 64;
  CHECK(other_model_fields(tr) == "ff 256; cache 64; linear dense");
  // Transformer-XL's cache length: cache_len, whose -1 means the slots field.
  ModelConfig xl;
  xl.model = "trxl";
  xl.slots = 32;
  CHECK(other_model_fields(xl) == "ff 256; cache 32 (the slots field; cache_len -1); linear dense");
  xl.cache_len = 48;
  CHECK(other_model_fields(xl) == "ff 256; cache 48 (cache_len; slots unused); linear dense");

  ModelConfig mtn;
  mtn.model = "mtn";
  mtn.n1_layers = 1;
  mtn.n2_layers = 3;
  CHECK(other_model_fields(mtn) == "ff 256; n1 layers 1, n2 layers 3; linear dense");
}
