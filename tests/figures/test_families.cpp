// The app's family entries (app/figures/families.h): one per core family, in its order; which
// panels draw each kind and the title of its attention map, written out as they were before
// the entries held them; a kind this build does not know has none.
#include "app/figures/extract.h"
#include "app/figures/families.h"
#include "app/view/trace_keys.h"
#include "core/engine/engine.h"
#include "core/models/config.h"
#include "core/models/factory.h"
#include "core/models/family.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

using namespace mnemo;
using namespace mnemo::app;

TEST_CASE("view families: one entry per core family - the panels and map title of every kind") {
  REQUIRE(view_families().size() == model_families().size());
  for (size_t i = 0; i < view_families().size(); ++i) CHECK(view_families()[i].family == model_families()[i].name);
  for (const std::string& kind : ModelConfig::known_models()) {
    CAPTURE(kind);
    const ViewFamily* f = view_family_of(kind);
    REQUIRE(f != nullptr);
    CHECK(f == &view_family(kind));
    CHECK(f->family == family_of(kind).name);
    // Memformer's writer panels draw memformer alone; every other kind has the attention panel.
    CHECK((f->panels == PanelFamily::kMemformer) == (kind == "memformer"));
  }
  CHECK(attention_map_title("rmt") == "RMT");
  CHECK(attention_map_title("rmt-write-only") == "RMT (write only)");
  CHECK(attention_map_title("trxl-rmt") == "Transformer-XL + RMT");
  // A recording's kind this build does not know, or none, has no entry; its map is "RMT".
  CHECK(view_family_of("lstm") == nullptr);
  CHECK(view_family_of("") == nullptr);
  CHECK(attention_map_title("") == "RMT");
  try {
    view_family("lstm");
    FAIL("an unknown kind has a view entry");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("unknown model kind 'lstm'; the known kinds are memformer") == 0);
  }
}

TEST_CASE("view families: the app asks for the keys its views draw - each family's among those its models emit") {
  // The list as it was written out before the entries held it, in its order.
  const std::vector<std::string> before = {
      "input.tokens",       "lm.loss",           "memformer.writer_attn", "memformer.read_attn.*",
      "memformer.decoder_read", "memformer.memory_prev", "memformer.memory", "memformer.forget_norm",
      "memformer.read_gate", "rmt.attn.*",        "rmt.block_mass.*",      "trxl.attn.*",
      "mtn.joint_attn.*",   "mtn.blocks",        "mtn.importance",        "mtn.candidate_source",
      "mtn.kept_source",    "mtn.kept_index",    "mtn.kept_importance",   "mtn.age",
      "qa.answer_prob",     "hash.*"};
  CHECK(gui_trace_keys() == before);
  for (const ViewFamily& v : view_families()) {
    CAPTURE(v.family);
    CHECK(static_cast<bool>(v.extract));
    const ModelFamily& core = model_families()[static_cast<size_t>(&v - view_families().data())];
    for (const std::string& key : v.view_keys) {
      CAPTURE(key);
      CHECK(std::find(core.trace_keys.begin(), core.trace_keys.end(), key) != core.trace_keys.end());
    }
  }
}

TEST_CASE("view families: each kind's extractor fills its arrays - a trace whose kind is unknown is read by its keys alike") {
  std::string text;
  for (int i = 0; i < 40; ++i) text.push_back(static_cast<char>('a' + (i * 3) % 26));
  const Document doc = make_document(text, "synthetic");
  for (const std::string& kind : ModelConfig::known_models()) {
    CAPTURE(kind);
    ModelConfig cfg = kind == "memformer" ? test::tiny_memformer(3, 8) : test::tiny_decoder(kind, 3, 8);
    if (capabilities_of(kind).mtn_family) {
      cfg.n1_layers = 1;
      cfg.n2_layers = 1;
    }
    Engine e(make_model(cfg, 4), doc, cfg.segment_len, TraceSpec::of(gui_trace_keys()));
    REQUIRE(e.step_forward());
    const SnapshotPtr s = e.step_forward();
    REQUIRE(s);
    const StepData named = make_step_data(*s, doc, kind);
    const StepData unnamed = make_step_data(*s, doc, "");
    const MemoryKind memory = capabilities_of(kind).memory;
    // Each family's own arrays, from its extractor.
    if (kind == "memformer") {
      CHECK(named.memformer.present);
      CHECK(named.memformer.slots == 3);
      CHECK_FALSE(named.memformer.writer.empty());
      CHECK_FALSE(named.memformer.memory.empty());
      CHECK(named.attention.empty());
    } else if (capabilities_of(kind).mtn_family) {
      CHECK(named.attention.source == "mtn.joint_attn.");
      CHECK(named.mtn.present == (memory == MemoryKind::kKeptTokens));
      CHECK_FALSE(named.memformer.present);
      CHECK(named.memformer.writer.empty());
    } else {
      const bool rmt = memory == MemoryKind::kMemoryTokens || memory == MemoryKind::kCacheAndTokens;
      CHECK(named.attention.source == (rmt ? "rmt.attn." : "trxl.attn."));
      CHECK(named.attention.kind == (rmt ? attention_map_title(kind) : memory == MemoryKind::kCache ? "Transformer-XL" : "Transformer"));
      CHECK(named.extra_attention.size() == (memory == MemoryKind::kCacheAndTokens ? 1u : 0u));
      CHECK_FALSE(named.memformer.present);
      CHECK(named.memformer.writer.empty());
      CHECK_FALSE(named.mtn.present);
    }
    // The same arrays when the kind is not named (a hand-written session): every family's
    // extractor runs and only the one whose keys are there finds anything.
    CHECK(unnamed.memformer.present == named.memformer.present);
    CHECK(unnamed.memformer.writer == named.memformer.writer);
    CHECK(unnamed.memformer.memory == named.memformer.memory);
    CHECK(unnamed.memformer.read == named.memformer.read);
    CHECK(unnamed.attention.values == named.attention.values);
    CHECK(unnamed.attention.source == named.attention.source);
    CHECK(unnamed.attention.mass == named.attention.mass);
    CHECK(unnamed.extra_attention.size() == named.extra_attention.size());
    CHECK(unnamed.mtn.present == named.mtn.present);
    CHECK(unnamed.mtn.cand_importance == named.mtn.cand_importance);
    CHECK(unnamed.token_losses.values == named.token_losses.values);
  }
}
