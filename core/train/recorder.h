// Probe recording (docs/formats.md#sessions "traces/"): every `record_every` training steps the trainer's
// caller steps a fixed probe document through the model (no gradients, eval mode, memory
// from the model's initial state) and stores every segment's traces, so a dashboard can
// show the live maps of the latest recorded step and a finished session can be replayed
// on a machine without the model or a GPU.
//
// A recording is one safetensors file (Session::save_trace):
//   "probe.ids"          [N] int64   the probe document's token ids
//   "probe.bytes"        [N'] uint8  its bytes
//   "s<i>/<trace key>"   each traced tensor of segment i (keys of docs/formats.md#trace-keys)
//   metadata "probe"     JSON {"segments", "segment_len", "loss": [per segment, null = none],
//                               "non_finite": [first non-finite key per segment, "" = none]}
//   metadata "step"      the training step it was recorded at
// summarize_recording() turns a recording into the scalars a dashboard plots over training
// (slot-type fractions, forgetting-norm quantiles, RMT block masses, bucket entropy); the
// trainer's caller appends them to metrics.log as a {"type": "probe"} record.
#pragma once
#include "core/data/document.h"
#include "core/data/tasks.h"
#include "core/engine/engine.h"
#include "core/io/safetensors.h"
#include "core/io/session.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace mnemo {

// What a recording traces by default: every key of docs/formats.md#trace-keys and the models' own keys.
TraceSpec recording_trace_spec();

// The probe document of a task: the valid tokens of test example `example` (train.record_example),
// at most `max_segments` of the task's segments; named "probe:<task>/test/<example>". Throws
// ConfigError when the example is not in the test split (check_probe_example) or gives no tokens.
Document probe_document(const TaskSource& task, int64_t max_segments = 8, int64_t example = 0);
// ConfigError naming train.record_example when `example` is not an index of the task's test
// split (the split's size in the message); nothing otherwise.
void check_probe_example(const TaskSource& task, int64_t example);

struct ProbeRecording {
  io::NamedTensors tensors;
  std::map<std::string, std::string> metadata;
  // Mean loss over the probe tokens its task scores (episode_scored_tokens; NaN when the task
  // names none, e.g. a text task) and how many of them a step predicted.
  double scored_loss = std::nan("");
  int64_t scored_tokens = 0;
};

// Steps `probe` through `model` segment by segment from its initial memory (no grad; the
// model is put in eval mode and restored) and collects every segment's traces.
// `scored`: 1 on the probe tokens the task scores (core/data/tasks.h episode_scored_tokens),
// or empty; gives scored_loss.
ProbeRecording record_probe(const MemoryModel& model, const Document& probe, int64_t segment_len, int64_t train_step,
                            const TraceSpec& spec = recording_trace_spec(), const std::vector<uint8_t>& scored = {});

// A recording read back: the probe document and one snapshot per segment, exactly as the
// Engine made them. Throws std::runtime_error naming `source` when the file is not a
// recording (missing probe tensors or metadata, a segment without traces).
struct ReplayedProbe {
  int64_t train_step = -1;
  int64_t segment_len = 0;
  Document doc;
  std::vector<SnapshotPtr> segments;
};
ReplayedProbe read_recording(const io::NamedTensors& tensors, const std::map<std::string, std::string>& metadata,
                             const std::string& source);

// Dashboard scalars of a recording (all optional, present when the traces are):
//   "loss"                      mean probe loss over segments with one
//   "slot_types"                {"retain","mix","overwrite"} fractions over segments and slots
//   "forget_norm"               {"min","p10","p50","p90","max"} of ||v_bias|| (last segment)
//   "rmt_block_mass"            {"<layer>": [reading, writing, rewriting]} mean over heads, segments
//   "hash_entropy"              {"<module path>": [normalised entropy per table]} over the probe
nlohmann::json summarize_recording(const ReplayedProbe& probe);

// What `mnemoscope train` does every record_every steps: records the probe, writes it as
// traces/step-N.safetensors and appends the {"type":"probe", "step": N, ...summary} record.
// Returns the record. Session write errors (disk full) propagate as io::IoError / SessionError.
// With `scored` (record_probe) the record also has "scored_loss": the mean loss over the tokens
// the task scores, the dashboard's "probe loss, scored tokens" (the plain "loss" also averages
// a synthetic task's unpredictable random symbols, which no training lowers).
nlohmann::json record_into_session(io::Session& session, const MemoryModel& model, const Document& probe,
                                   int64_t segment_len, int64_t step, const TraceSpec& spec = recording_trace_spec(),
                                   const std::vector<uint8_t>& scored = {});

}  // namespace mnemo
