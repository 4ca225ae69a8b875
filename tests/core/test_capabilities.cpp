// What each model kind can do (core/models/capabilities.h) agrees with the model the factory
// builds: its memory state holds the tensor the table names, its loss predicts the tokens the
// table says, and the provenance functions follow the table; an unknown kind is refused.
#include "core/models/capabilities.h"
#include "core/models/factory.h"
#include "core/trace/provenance_trace.h"
#include "tests/support/helpers.h"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace mnemo;

TEST_CASE("capabilities: every known model kind has an entry that matches the model built for it") {
  for (const std::string& kind : ModelConfig::known_models()) {
    CAPTURE(kind);
    const ModelCapabilities& caps = capabilities_of(kind);
    ModelConfig cfg = kind == "memformer" ? test::tiny_memformer(3, 8) : test::tiny_decoder(kind, 3, 8);
    if (caps.mtn_family) {
      cfg.n1_layers = 1;
      cfg.n2_layers = 1;
    }
    MemoryModel m = make_model(cfg, 0);
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
    CHECK((caps.panels == PanelFamily::kMemformer) == (kind == "memformer"));
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
  CHECK(std::string(capabilities_of("rmt-write-only").rmt_title) == "RMT (write only)");
  CHECK(capabilities_of("rmt-write-only").rmt_previous_write);
  CHECK_FALSE(capabilities_of("rmt-write-only").rmt_read_block);
  CHECK(capabilities_of("trxl-rmt").memory == MemoryKind::kCacheAndTokens);
  CHECK(capabilities_of("mtn").provenance == ProvenanceKind::kKeptEntries);
  try {
    capabilities_of("lstm");
    FAIL("an unknown kind was accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "unknown model kind 'lstm'");
  }
}
