// The trace keys of the MTN family (docs/formats.md#trace-keys, docs/models.md#mtn): the
// canonical names, in the same namespace as the keys every model emits (core/trace/keys.h).
// Shapes are batch first, float32 unless noted. Plain constants: the panels include it.
#pragma once

namespace mnemo::keys {

// --- Memory Transformer Network (docs/models.md#mtn) ---
inline constexpr const char* kMtnImportance = "mtn.importance";            // [B, m+L] candidates' V_I.e + b_I
inline constexpr const char* kMtnCandidateSource = "mtn.candidate_source"; // [B, m+L] int64, -1 = no candidate
inline constexpr const char* kMtnImportancePrev = "mtn.importance_prev";   // [B, m] added to the logits this step
inline constexpr const char* kMtnKeptSource = "mtn.kept_source";           // [B, m] int64 document token index
inline constexpr const char* kMtnKeptIndex = "mtn.kept_index";             // [B, m] int64 candidate index, -1 empty
inline constexpr const char* kMtnKeptImportance = "mtn.kept_importance";   // [B, m]
inline constexpr const char* kMtnAge = "mtn.age";                          // [B, m] int64 keep_m_max operations survived
inline constexpr const char* kMtnOutput = "mtn.e";                         // [B, m+L, d] next memory / candidates, chunk
inline constexpr const char* kMtnJointAttnPrefix = "mtn.joint_attn.";      // + layer: [B, H, T, T]
inline constexpr const char* kMtnBlocks = "mtn.blocks";                    // [3] int64 joint rows: memory, chunk, write memory
// The answer-tagging head (TaskHead::Kind::kAnswerTagging, core/data/segment.h) of the MTN models.
inline constexpr const char* kQaAnswerProb = "qa.answer_prob";             // [B, L] P(answer) per chunk token
inline constexpr const char* kQaLoss = "qa.loss";                          // [B, L] class-weighted NLL per token

}  // namespace mnemo::keys
