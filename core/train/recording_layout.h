// The layout of a probe recording (core/train/recorder.h, docs/formats.md#recorded-traces)
// read from its safetensors header and metadata alone, without LibTorch: the "probe"
// metadata, the training step, the probe document's size, and which segment each
// "s<i>/<key>" tensor belongs to. read_recording() builds on it; the fuzz targets (fuzz/)
// run it directly.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mnemo {

// A tensor of the file as its header describes it.
struct RecordingTensorInfo {
  std::string name;
  std::string dtype;  // safetensors dtype name ("U8", "F32", ...)
  std::vector<int64_t> shape;
};

struct RecordingLayout {
  int64_t train_step = -1;
  int64_t segment_len = 0;
  int64_t segments = 0;
  int64_t doc_bytes = 0;             // length of "probe.bytes"
  std::vector<double> losses;        // per segment; NaN where none
  std::vector<std::string> non_finite;  // per segment: the first non-finite key, "" = none
  struct Ref {
    size_t tensor;        // index into the tensor list given
    int64_t segment;
    std::string key;      // the trace key after "s<i>/"
  };
  std::vector<Ref> traced;  // in the order of the tensor list given
};

// The largest probe a recording may describe (segments).
inline constexpr int64_t kMaxRecordingSegments = 1000000;

// The message every rejection of a recording carries: "recording 'SOURCE' WHAT; it was not
// written by `mnemoscope train` or a Python SessionWriter (...)".
std::runtime_error recording_error(const std::string& source, const std::string& what);

// Checks the metadata and the tensor names; throws recording_error(...) naming the fault.
// `tensors` should be sorted by name (the order read_recording checks them in).
RecordingLayout parse_recording_layout(const std::vector<RecordingTensorInfo>& tensors,
                                       const std::map<std::string, std::string>& metadata, const std::string& source);

}  // namespace mnemo
