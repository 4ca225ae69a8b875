// A memory entry's effect on a tour stop's tokens, computed apart from the worker's slot
// effects (core/engine/doc_score.h segment_entry_effects, which the Document panel's
// slot-effect tint and the Slot effects panel draw), for `tour --check`'s slot_effect claims
// (docs/formats.md#tour-checks). Torch-free header.
#pragma once
#include "app/gui/model/tour.h"

#include <vector>

namespace mnemo::app {

// The stop's model and document, scored whole with the memory carried (score_document), then
// again with the stop's segment starting from that carried memory with entry c.slot removed
// (core/models/memory_entries.h ablate_entries, reset or zeroed as c.of says;
// score_document_patched): per token of [c.token_from, c.token_to), (removed - carried) / ln 2
// bits, NaN where nothing predicts the token. Segment 0 starts from the initial memory, which
// no text has written: nothing is removed there (0 bits), as the worker does. Throws naming
// the problem (an unreadable checkpoint or document, an entry outside the memory).
std::vector<double> entry_effect_apart(const TourStop& stop, const TourCheck& c);

}  // namespace mnemo::app
