// The model families (core/models/family.h): every registered kind builds, its capabilities
// are the values written out below (the table docs/models.md describes), the kinds, the
// factory and capabilities_of all come from the one registry, a kind's traces hold only the
// keys its family declares, and an unknown kind is refused naming the known ones.
#include "core/engine/engine.h"
#include "core/models/capabilities.h"
#include "core/models/factory.h"
#include "core/models/family.h"
#include "core/trace/key_check.h"
#include "core/trace/provenance_trace.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <set>
#include <stdexcept>

using namespace mnemo;

namespace {

ModelConfig tiny_of(const std::string& kind) {
  ModelConfig cfg = kind == "memformer" ? test::tiny_memformer(3, 8) : test::tiny_decoder(kind, 3, 8);
  if (capabilities_of(kind).mtn_family) {
    cfg.n1_layers = 1;
    cfg.n2_layers = 1;
  }
  return cfg;
}

struct Expected {
  const char* kind;
  const char* family;
  bool next_segment;
  Architecture architecture;
  MemoryKind memory;
  ProvenanceKind provenance;
  bool mtn_family, read_block, previous_write;
  const char* memory_state;
};

// The capability table as it stood before the families were registered (one row per kind).
const std::vector<Expected> kExpected = {
    {"memformer", "memformer", true, Architecture::kEncoderDecoder, MemoryKind::kSlots, ProvenanceKind::kWriterAttention,
     false, false, false, "slots"},
    {"rmt", "decoder-lm", false, Architecture::kDecoderOnly, MemoryKind::kMemoryTokens, ProvenanceKind::kAttentionRollout,
     false, true, false, "memory"},
    {"rmt-write-only", "decoder-lm", false, Architecture::kDecoderOnly, MemoryKind::kMemoryTokens, ProvenanceKind::kNone,
     false, false, true, "memory"},
    {"trxl", "decoder-lm", false, Architecture::kDecoderOnly, MemoryKind::kCache, ProvenanceKind::kNone, false, false,
     false, ""},
    {"trxl-rmt", "decoder-lm", false, Architecture::kDecoderOnly, MemoryKind::kCacheAndTokens,
     ProvenanceKind::kAttentionRollout, false, true, false, "memory"},
    {"transformer", "decoder-lm", false, Architecture::kDecoderOnly, MemoryKind::kNone, ProvenanceKind::kNone, false,
     false, false, ""},
    {"mtn", "mtn", false, Architecture::kMtn, MemoryKind::kKeptTokens, ProvenanceKind::kKeptEntries, true, false, false,
     ""},
    {"mtn-naive", "mtn", false, Architecture::kMtn, MemoryKind::kLearnedVectors, ProvenanceKind::kNone, true, false,
     false, ""},
    {"no-memory", "mtn", false, Architecture::kMtn, MemoryKind::kNone, ProvenanceKind::kNone, true, false, false, ""},
};

bool matches(const std::string& key, const std::string& pattern) {
  if (!pattern.empty() && pattern.back() == '*') return key.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  return key == pattern;
}

}  // namespace

TEST_CASE("model families: the registered kinds and their capabilities are the table's, written out") {
  std::vector<std::string> kinds;
  for (const Expected& e : kExpected) kinds.push_back(e.kind);
  CHECK(ModelConfig::known_models() == kinds);
  for (const Expected& e : kExpected) {
    CAPTURE(e.kind);
    const ModelCapabilities& c = capabilities_of(e.kind);
    CHECK(family_of(e.kind).name == e.family);
    CHECK(c.next_segment == e.next_segment);
    CHECK(c.architecture == e.architecture);
    CHECK(c.memory == e.memory);
    CHECK(c.provenance == e.provenance);
    CHECK(c.mtn_family == e.mtn_family);
    CHECK(c.mtn_family == (c.architecture == Architecture::kMtn));
    CHECK(c.rmt_read_block == e.read_block);
    CHECK(c.rmt_previous_write == e.previous_write);
    CHECK(std::string(c.memory_state) == e.memory_state);
    CHECK(is_known_model(e.kind));
  }
  // Every family contributes its kinds once, and names a constructor in this (LibTorch) build.
  std::set<std::string> seen;
  for (const ModelFamily& f : model_families()) {
    CAPTURE(f.name);
    CHECK(static_cast<bool>(f.make));
    CHECK_FALSE(f.kinds.empty());
    for (const auto& k : f.kinds) CHECK(seen.insert(k.model_kind).second);
  }
  // The config's field table offers exactly these kinds.
  CHECK(ModelConfig::fields().find("model")->help ==
        "model kind: memformer, rmt, rmt-write-only, trxl, trxl-rmt, transformer, mtn, mtn-naive, no-memory");
}

TEST_CASE("model families: every registered kind builds a model that matches its capabilities") {
  for (const std::string& kind : ModelConfig::known_models()) {
    CAPTURE(kind);
    const ModelCapabilities& caps = capabilities_of(kind);
    MemoryModel m = make_model(tiny_of(kind), 0);
    CHECK(m->kind() == kind);
    CHECK(&m->capabilities() == &caps);
    CHECK(caps.next_segment == (loss_target_of(kind) == LossTarget::kNextSegment));
    const MemoryState init = m->initial_memory(1);
    // The memory entries live where the table says (the bench and the memory panels read them).
    if (std::string(caps.memory_state).empty()) {
      CHECK((caps.memory != MemoryKind::kSlots && caps.memory != MemoryKind::kMemoryTokens));
    } else {
      REQUIRE(init.tensors.count(caps.memory_state) == 1);
      CHECK(init.tensors.at(caps.memory_state).size(1) == 3);  // the config's 3 slots / memory tokens
    }
    if (caps.memory == MemoryKind::kNone) CHECK(init.tensors.empty());
    CHECK(has_provenance_chain(kind) ==
          (caps.provenance == ProvenanceKind::kWriterAttention || caps.provenance == ProvenanceKind::kAttentionRollout));
    CHECK(provenance_trace_keys(kind).empty() == !has_provenance_chain(kind));
    // A task's head (core/data/segment.h): language modelling is every model's; answer
    // tagging only the MTN family's, the others refuse it naming the kinds that can.
    m->set_task_head(TaskHead{});
    const TaskHead tagging{TaskHead::Kind::kAnswerTagging, 1.0, 3.0, "qa"};
    if (caps.mtn_family) {
      m->set_task_head(tagging);
      CHECK_FALSE(m->predicts_tokens());
    } else {
      try {
        m->set_task_head(tagging);
        FAIL("answer tagging was accepted");
      } catch (const ConfigError& e) {
        CHECK(std::string(e.what()) == "task 'qa' tags answer bytes and needs an MTN-family model (model.model = mtn, "
                                       "mtn-naive, no-memory), not '" + kind + "'");
      }
      CHECK(m->predicts_tokens());
    }
  }
  // A kind this build does not know (a recording's) is read as predicting the next token.
  CHECK(loss_target_of("") == LossTarget::kNextToken);
  CHECK(loss_target_of("lstm") == LossTarget::kNextToken);
  CHECK(loss_target_of("memformer") == LossTarget::kNextSegment);
}

TEST_CASE("model families: a kind's traces hold only its family's keys and the common ones, each with a canonical dtype and shape") {
  std::string text;
  for (int i = 0; i < 40; ++i) text.push_back(static_cast<char>('a' + (i * 5) % 26));
  for (const std::string& kind : ModelConfig::known_models()) {
    CAPTURE(kind);
    const ModelFamily& family = family_of(kind);
    ModelConfig cfg = tiny_of(kind);
    for (const std::string linear : {"dense", "hashed"}) {
      cfg.linear = linear;
      Engine e(make_model(cfg, 2), make_document(text, "synthetic"), cfg.segment_len, TraceSpec::all());
      e.set_memory_benefit(capabilities_of(kind).memory != MemoryKind::kNone);
      REQUIRE(e.step_forward());
      const SnapshotPtr s = e.step_forward();  // the second step: a memory from the first
      REQUIRE(s);
      CHECK(s->trace.has("lm.loss"));
      for (const auto& [key, t] : s->trace.tensors) {
        CAPTURE(key);
        bool declared = false;
        for (const auto& p : family.trace_keys) declared = declared || matches(key, p);
        for (const auto& p : common_trace_keys()) declared = declared || matches(key, p);
        CHECK(declared);
        // ... has a canonical dtype and shape (core/trace/key_check.cpp's table, docs/formats.md
        // "Trace keys"): a key without a rule would pass any tensor, so a recording could hold it
        // in any form. An undefined tensor fails every rule; only a key without one accepts it.
        CHECK_MESSAGE(!check_trace_tensor(key, torch::Tensor()).empty(), "no dtype/shape rule for this key");
        // ... and no other family's: a trace tells its family.
        for (const ModelFamily& other : model_families())
          if (&other != &family)
            for (const auto& p : other.trace_keys) CHECK_FALSE(matches(key, p));
      }
    }
  }
}

TEST_CASE("model families: an unknown kind is refused naming the known kinds") {
  const std::string known = "the known kinds are memformer, rmt, rmt-write-only, trxl, trxl-rmt, transformer, mtn, "
                            "mtn-naive, no-memory";
  for (auto f : {+[] { capabilities_of("lstm"); }, +[] { family_of("lstm"); }}) {
    try {
      f();
      FAIL("an unknown kind was accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()) == "unknown model kind 'lstm'; " + known);
    }
  }
  CHECK_FALSE(is_known_model("lstm"));
  CHECK_FALSE(is_known_model(""));
  // The config refuses it too (before any model is built), naming the kinds it allows.
  ModelConfig cfg;
  cfg.model = "lstm";
  try {
    make_model(cfg, 0);
    FAIL("an unknown kind was built");
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    CHECK(m.find("lstm") != std::string::npos);
    CHECK(m.find("no-memory") != std::string::npos);
  }
}
