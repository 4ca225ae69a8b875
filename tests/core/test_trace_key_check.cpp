// core/trace/key_check: canonical trace keys with the wrong dtype or rank are named; keys that
// are not canonical pass; a probe recording holding such a key is rejected by read_recording
// (the Python reader rejects it with the same words: python/tests/test_cross_language.py).
#include "core/trace/key_check.h"
#include "core/train/recorder.h"

#include <doctest/doctest.h>

using namespace mnemo;

TEST_CASE("trace key check: dtype and rank of canonical keys, anything for other keys") {
  CHECK(check_trace_tensor("rmt.attn.0", torch::zeros({1, 2, 5, 5})).empty());
  CHECK(check_trace_tensor("rmt.attn.12", torch::zeros({1, 2, 5, 5})).empty());
  CHECK(check_trace_tensor("memformer.slot_type", torch::zeros({1, 4}, torch::kInt8)).empty());
  CHECK(check_trace_tensor("hash.encoder.0.self_attn.q.counts", torch::zeros({2, 16}, torch::kInt64)).empty());
  CHECK(check_trace_tensor("user.mine", torch::zeros({3}, torch::kInt16)).empty());
  CHECK(check_trace_tensor("rmt.attn.x", torch::zeros({3}, torch::kInt16)).empty());  // not a canonical key
  CHECK(check_trace_tensor("rmt.attn.0", torch::zeros({1, 2, 11, 11}, torch::kInt64)) ==
        "trace key 'rmt.attn.0' is stored as I64 with shape [1, 2, 11, 11]; the canonical key is F32 [B, H, T, T] "
        "(docs/formats.md \"Traces\")");
  CHECK(check_trace_tensor("memformer.writer_attn", torch::zeros({2, 3, 4})).find("canonical key is F32 [B, H, k, 1+L+C]") !=
        std::string::npos);
  CHECK(check_trace_tensor("hash.enc.bucket", torch::zeros({4, 2}, torch::kInt64)).find("is stored as I64") != std::string::npos);
  CHECK(check_trace_tensor("mtn.blocks", torch::zeros({3}, torch::kInt64)).empty());
  CHECK_FALSE(check_trace_tensor("mtn.blocks", torch::zeros({1, 3}, torch::kInt64)).empty());
}

TEST_CASE("read_recording rejects a canonical key of the wrong dtype, naming the segment and the key") {
  const std::string doc = "abcdefg";  // 7 bytes, segments of 4: 2 segments
  io::NamedTensors t = {{"probe.ids", torch::arange(7, torch::kInt64)},
                        {"probe.bytes", torch::tensor(std::vector<int64_t>(doc.begin(), doc.end())).to(torch::kUInt8)},
                        {"s0/rmt.attn.0", torch::zeros({1, 2, 8, 8})},
                        {"s1/rmt.attn.0", torch::zeros({1, 2, 8, 8})}};
  std::map<std::string, std::string> meta = {{"probe", R"({"segments":2,"segment_len":4})"}, {"step", "3"}};
  CHECK(read_recording(t, meta, "rec").segments.size() == 2);
  t[3].second = torch::zeros({1, 2, 8, 8}, torch::kInt64);
  CHECK_THROWS_WITH(read_recording(t, meta, "rec"),
                    doctest::Contains("recording 'rec' segment 1: trace key 'rmt.attn.0' is stored as I64"));
  t[3].second = torch::zeros({1, 8, 8});
  CHECK_THROWS_WITH(read_recording(t, meta, "rec"), doctest::Contains("with shape [1, 8, 8]; the canonical key is F32"));
}
