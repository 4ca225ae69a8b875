#include "core/train/recorder.h"

#include "core/train/recording_layout.h"
#include "core/train/run_log.h"

#include "core/data/tokenizer.h"
#include "core/errors.h"
#include "core/models/rmt.h"
#include "core/trace/analysis.h"
#include "core/trace/hash_stats.h"
#include "core/trace/key_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo {

namespace {

constexpr const char* kProbeIds = "probe.ids";
constexpr const char* kProbeBytes = "probe.bytes";

std::string seg_prefix(int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "s%lld/", static_cast<long long>(i));
  return buf;
}

// Restores the model's training mode on scope exit.
class EvalModeScope {
 public:
  explicit EvalModeScope(MemoryModelImpl& m) : m_(m), was_training_(m.is_training()) { m_.eval(); }
  ~EvalModeScope() { m_.train(was_training_); }
  EvalModeScope(const EvalModeScope&) = delete;
  EvalModeScope& operator=(const EvalModeScope&) = delete;

 private:
  MemoryModelImpl& m_;
  bool was_training_;
};

double quantile(std::vector<float> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos)), hi = static_cast<size_t>(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

TraceSpec recording_trace_spec() {
  // Everything but the per-layer copies that only the CLI's detailed figures use; a probe is
  // a handful of segments, so this stays small (see docs/formats.md "traces/").
  return TraceSpec::of({"input.*", "lm.*", "memformer.writer_attn", "memformer.memory_prev", "memformer.memory",
                        "memformer.forget_norm", "memformer.slot_type", "memformer.read_attn.*", "rmt.*", "trxl.*",
                        "hash.*", "mtn.joint_attn.*", "mtn.importance", "mtn.candidate_source", "mtn.importance_prev", "mtn.kept_source",
                        "mtn.kept_index", "mtn.kept_importance", "mtn.age", "mtn.blocks", "qa.*"});
}

void check_probe_example(const TaskSource& task, int64_t example) {
  const int64_t n = task.split_size(Split::kTest);
  if (example >= 0 && example < n) return;
  throw ConfigError("train.record_example = " + std::to_string(example) + ": the test split of task '" + task.name() +
                    "' has " + std::to_string(n) + " examples (0.." + std::to_string(n - 1) + "); choose one of those");
}

Document probe_document(const TaskSource& task, int64_t max_segments, int64_t example) {
  if (max_segments < 1) throw ConfigError("probe: max_segments must be >= 1 (got " + std::to_string(max_segments) + ")");
  check_probe_example(task, example);
  TaskBatch b = task.batch(Split::kTest, {example}, torch::kCPU);
  std::vector<int64_t> ids;
  const int64_t n = std::min<int64_t>(max_segments, static_cast<int64_t>(b.segments.size()));
  for (int64_t t = 0; t < n; ++t) {
    const auto& s = b.segments[static_cast<size_t>(t)];
    auto tok = s.tokens.select(0, 0).to(torch::kInt64).contiguous();
    auto val = s.valid.defined() ? s.valid.select(0, 0).to(torch::kBool).contiguous() : torch::ones_like(tok, torch::kBool);
    const int64_t* tp = tok.data_ptr<int64_t>();
    const bool* vp = val.data_ptr<bool>();
    for (int64_t j = 0; j < tok.numel(); ++j)
      if (vp[j] && !ByteTokenizer::is_special(tp[j])) ids.push_back(tp[j]);
  }
  const std::string ex = std::to_string(example);
  if (ids.empty()) throw ConfigError("probe: task '" + task.name() + "' gave no tokens for test example " + ex);
  return make_document(ByteTokenizer::decode(ids), "probe:" + task.name() + "/test/" + ex);
}

ProbeRecording record_probe(const MemoryModel& model, const Document& probe, int64_t segment_len, int64_t train_step,
                            const TraceSpec& spec, const std::vector<uint8_t>& scored) {
  TORCH_CHECK(model, "record_probe: no model");
  EvalModeScope mode(*model);
  Engine engine(model, probe, segment_len, spec);
  ProbeRecording r;
  r.tensors.emplace_back(kProbeIds, torch::tensor(probe.ids(), torch::kInt64));
  auto bytes = torch::empty({static_cast<int64_t>(probe.bytes.size())}, torch::kUInt8);
  std::copy(probe.bytes.begin(), probe.bytes.end(), reinterpret_cast<char*>(bytes.data_ptr<uint8_t>()));
  r.tensors.emplace_back(kProbeBytes, bytes);
  nlohmann::json losses = nlohmann::json::array(), bad = nlohmann::json::array();
  const LossTarget target = loss_target_of(model->kind());
  double scored_sum = 0;
  for (int64_t i = 0; i < engine.num_segments(); ++i) {
    SnapshotPtr s = engine.step_forward();
    TORCH_CHECK(s, "record_probe: segment ", i, " produced no snapshot");
    // Value j of lm.loss predicts document token predicted_token(...) (docs/formats.md).
    if (!scored.empty() && s->trace.has(keys::kLmLoss)) {
      auto l = s->trace.at(keys::kLmLoss)[0].to(torch::kFloat64).contiguous();
      const double* lp = l.data_ptr<double>();
      for (int64_t j = 0; j < l.numel(); ++j) {
        const int64_t tok = predicted_token(target, i, segment_len, j);
        if (tok < 0 || tok >= static_cast<int64_t>(scored.size()) || !scored[static_cast<size_t>(tok)]) continue;
        if (!std::isfinite(lp[j])) continue;
        scored_sum += lp[j];
        ++r.scored_tokens;
      }
    }
    const std::string pre = seg_prefix(i);
    for (const auto& [key, t] : s->trace.tensors) r.tensors.emplace_back(pre + key, t.contiguous());
    if (std::isfinite(s->loss)) losses.push_back(s->loss);
    else losses.push_back(nullptr);
    bad.push_back(s->non_finite ? s->non_finite_key : std::string());
  }
  nlohmann::json meta = {{"segments", engine.num_segments()}, {"segment_len", segment_len}, {"loss", losses}, {"non_finite", bad}};
  r.metadata["probe"] = meta.dump();
  r.metadata["step"] = std::to_string(train_step);
  if (r.scored_tokens > 0) r.scored_loss = scored_sum / static_cast<double>(r.scored_tokens);
  return r;
}

ReplayedProbe read_recording(const io::NamedTensors& tensors, const std::map<std::string, std::string>& metadata,
                             const std::string& source) {
  // The layout (metadata, names, sizes) is checked without touching tensor data; the
  // tensors themselves are then checked against their trace keys.
  std::map<std::string, torch::Tensor> by_name;
  for (const auto& [k, t] : tensors) by_name[k] = t;
  std::vector<RecordingTensorInfo> infos;
  std::vector<const torch::Tensor*> ptrs;
  for (const auto& [k, t] : by_name) {
    infos.push_back({k, io::dtype_name(t.scalar_type()), t.sizes().vec()});
    ptrs.push_back(&t);
  }
  const RecordingLayout layout = parse_recording_layout(infos, metadata, source);
  ReplayedProbe p;
  p.train_step = layout.train_step;
  p.segment_len = layout.segment_len;
  auto bytes = by_name.at(kProbeBytes).contiguous();
  p.doc = make_document(std::string(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<size_t>(bytes.numel())),
                        source);
  const int64_t n = layout.segments;
  std::vector<Trace> traces(static_cast<size_t>(n));
  for (const auto& ref : layout.traced) {
    const torch::Tensor& t = *ptrs[ref.tensor];
    const std::string bad = check_trace_tensor(ref.key, t);
    if (!bad.empty()) throw recording_error(source, "segment " + std::to_string(ref.segment) + ": " + bad);
    traces[static_cast<size_t>(ref.segment)].tensors[ref.key] = t;
  }
  for (int64_t i = 0; i < n; ++i) {
    auto s = std::make_shared<Snapshot>();
    s->segment = i;
    s->num_segments = n;
    s->first_token = i * p.segment_len;
    s->length = std::min(p.segment_len, p.doc.size() - s->first_token);
    s->trace = std::move(traces[static_cast<size_t>(i)]);
    const double loss = layout.losses[static_cast<size_t>(i)];
    if (!std::isnan(loss)) s->loss = loss;
    s->non_finite_key = layout.non_finite[static_cast<size_t>(i)];
    s->non_finite = !s->non_finite_key.empty();
    p.segments.push_back(std::move(s));
  }
  return p;
}

nlohmann::json summarize_recording(const ReplayedProbe& probe) {
  nlohmann::json j = nlohmann::json::object();
  double loss_sum = 0;
  int64_t loss_n = 0;
  SlotTypeCounts types;
  std::map<std::string, std::vector<double>> mass_sum;
  std::map<std::string, int64_t> mass_n;
  HashStatsAccumulator hashes;
  std::vector<float> forget;
  for (const auto& s : probe.segments) {
    if (std::isfinite(s->loss)) {
      loss_sum += s->loss;
      ++loss_n;
    }
    const Trace& tr = s->trace;
    if (tr.has(keys::kSlotType)) {
      SlotTypeCounts c = count_slot_types(tr.at(keys::kSlotType));
      types.retain += c.retain;
      types.mix += c.mix;
      types.overwrite += c.overwrite;
    }
    if (tr.has(keys::kForgetNorm)) {
      auto f = tr.at(keys::kForgetNorm).to(torch::kFloat32).contiguous().view(-1);
      forget.assign(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
    }
    for (const auto& key : tr.keys_with_prefix(keys::kRmtBlockMassPrefix)) {
      // [B, H, 3] -> mean over batch and heads
      auto m = tr.at(key).to(torch::kFloat64).reshape({-1, 3}).mean(0).contiguous();
      auto& acc = mass_sum[key.substr(std::string(keys::kRmtBlockMassPrefix).size())];
      acc.resize(3, 0.0);
      for (int c = 0; c < 3; ++c) acc[static_cast<size_t>(c)] += m[c].item<double>();
      ++mass_n[key.substr(std::string(keys::kRmtBlockMassPrefix).size())];
    }
    hashes.add(tr);
  }
  if (loss_n > 0) j["loss"] = loss_sum / static_cast<double>(loss_n);
  if (types.total() > 0) {
    const double t = static_cast<double>(types.total());
    j["slot_types"] = {{"retain", types.retain / t}, {"mix", types.mix / t}, {"overwrite", types.overwrite / t}};
  }
  if (!forget.empty()) {
    j["forget_norm"] = {{"min", quantile(forget, 0)},
                        {"p10", quantile(forget, 0.1)},
                        {"p50", quantile(forget, 0.5)},
                        {"p90", quantile(forget, 0.9)},
                        {"max", quantile(forget, 1)}};
  }
  for (auto& [layer, acc] : mass_sum) {
    nlohmann::json v = nlohmann::json::array();
    for (double x : acc) v.push_back(x / static_cast<double>(mass_n[layer]));
    j["rmt_block_mass"][layer] = v;
  }
  for (const auto& path : hashes.paths()) {
    nlohmann::json v = nlohmann::json::array();
    for (const auto& t : hashes.stats(path).tables) v.push_back(t.entropy);
    j["hash_entropy"][path] = v;
  }
  return j;
}

nlohmann::json record_into_session(io::Session& session, const MemoryModel& model, const Document& probe,
                                   int64_t segment_len, int64_t step, const TraceSpec& spec,
                                   const std::vector<uint8_t>& scored) {
  ProbeRecording r = record_probe(model, probe, segment_len, step, spec, scored);
  const std::string path = session.save_trace(step, r.tensors, r.metadata);
  nlohmann::json j =
      probe_record(step, summarize_recording(read_recording(r.tensors, r.metadata, path)), r.scored_loss, r.scored_tokens);
  session.append_metrics(j);
  return j;
}

}  // namespace mnemo
