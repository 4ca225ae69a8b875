// A probe recording's layout without LibTorch; see core/train/recording_layout.h.
#include "core/train/recording_layout.h"

#include "core/io/json_file.h"

#include <nlohmann/json.hpp>

#include <limits>

namespace mnemo {

std::runtime_error recording_error(const std::string& source, const std::string& what) {
  return std::runtime_error("recording '" + source + "' " + what +
                            "; it was not written by `mnemoscope train` or a Python SessionWriter (record it "
                            "again, or pick another step)");
}

RecordingLayout parse_recording_layout(const std::vector<RecordingTensorInfo>& tensors,
                                       const std::map<std::string, std::string>& metadata, const std::string& source) {
  auto fail = [&](const std::string& what) { return recording_error(source, what); };
  auto mit = metadata.find("probe");
  if (mit == metadata.end()) throw fail("has no \"probe\" metadata");
  nlohmann::json meta;
  try {
    meta = mnemo::io::parse_json(mit->second);
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("has unreadable \"probe\" metadata (") + e.what() + ")");
  }
  RecordingLayout p;
  auto sit = metadata.find("step");
  if (sit != metadata.end()) {
    try {
      p.train_step = std::stoll(sit->second);
    } catch (const std::exception&) {
      throw fail("has a bad \"step\" metadata value '" + sit->second + "'");
    }
  }
  if (!meta.is_object() || !meta.contains("segments") || !meta["segments"].is_number_integer() ||
      !meta.contains("segment_len") || !meta["segment_len"].is_number_integer())
    throw fail("has \"probe\" metadata without segments / segment_len");
  const int64_t n = meta["segments"].get<int64_t>();
  p.segment_len = meta["segment_len"].get<int64_t>();
  if (n < 1 || n > kMaxRecordingSegments || p.segment_len < 1) throw fail("has absurd probe sizes");
  p.segments = n;

  const RecordingTensorInfo* bytes = nullptr;
  for (const auto& t : tensors)
    if (t.name == "probe.bytes") bytes = &t;
  if (!bytes || bytes->dtype != "U8" || bytes->shape.size() != 1) throw fail("has no probe.bytes [N] uint8 tensor");
  p.doc_bytes = bytes->shape[0];
  if (p.doc_bytes == 0) throw fail("has an empty probe document");
  const int64_t expect = p.doc_bytes / p.segment_len + (p.doc_bytes % p.segment_len != 0);
  if (expect != n)
    throw fail("says " + std::to_string(n) + " segments but its probe document has " + std::to_string(expect) +
               " segments of " + std::to_string(p.segment_len));

  for (size_t ti = 0; ti < tensors.size(); ++ti) {
    const std::string& k = tensors[ti].name;
    if (k.size() < 3 || k[0] != 's') continue;
    const auto slash = k.find('/');
    if (slash == std::string::npos || slash < 2) continue;
    int64_t i = -1;
    try {
      i = std::stoll(k.substr(1, slash - 1));
    } catch (const std::exception&) {
      throw fail("has a tensor with a bad segment name '" + k + "'");
    }
    if (i < 0 || i >= n) throw fail("has a tensor '" + k + "' for a segment outside 0.." + std::to_string(n - 1));
    p.traced.push_back({ti, i, k.substr(slash + 1)});
  }
  const auto& losses = meta.value("loss", nlohmann::json::array());
  const auto& bad = meta.value("non_finite", nlohmann::json::array());
  p.losses.assign(static_cast<size_t>(n), std::numeric_limits<double>::quiet_NaN());
  p.non_finite.assign(static_cast<size_t>(n), "");
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    if (losses.is_array() && losses.size() > u && losses[u].is_number()) p.losses[u] = losses[u].get<double>();
    if (bad.is_array() && bad.size() > u && bad[u].is_string()) p.non_finite[u] = bad[u].get<std::string>();
  }
  return p;
}

}  // namespace mnemo
