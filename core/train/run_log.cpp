#include "core/train/run_log.h"

#include "core/io/json_file.h"
#include "core/io/session.h"

#include "core/io/framed_log.h"
#include "core/train/trainer.h"


#include <algorithm>
#include <array>
#include <functional>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace mnemo {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double num(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return kNaN;  // null = NaN/Inf when written
  return it->get<double>();
}

int64_t step_of(const nlohmann::json& j) {
  auto it = j.find("step");
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

void drop_after(std::vector<nlohmann::json>& v, int64_t step) {
  v.erase(std::remove_if(v.begin(), v.end(), [&](const nlohmann::json& j) { return step_of(j) > step; }), v.end());
}

Curve field_curve(const std::vector<nlohmann::json>& recs, const std::string& name, const char* field,
                  const std::function<bool(const nlohmann::json&)>& keep = nullptr) {
  Curve c;
  c.name = name;
  for (const auto& r : recs) {
    if (keep && !keep(r)) continue;
    if (!r.contains(field)) continue;
    c.x.push_back(static_cast<double>(step_of(r)));
    c.y.push_back(num(r, field));
  }
  return c;
}

void push_nonempty(std::vector<Curve>& out, Curve c) {
  if (!c.x.empty()) out.push_back(std::move(c));
}

std::string shown(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 40) : s;
}

int64_t int_or(const nlohmann::json& r, const char* key, int64_t fallback) {
  auto it = r.find(key);
  return it != r.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

std::string string_or(const nlohmann::json& r, const char* key) {
  auto it = r.find(key);
  return it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string record_problem(const nlohmann::json& r) {
  if (!r.is_object()) return "the record is " + shown(r) + ", not a JSON object";
  const auto t = r.find("type");
  if (t != r.end() && !t->is_string()) return "field 'type' is " + shown(*t) + ", not a string";
  const std::string type = t == r.end() ? std::string() : t->get<std::string>();
  static const char* const kStepped[] = {"step", "eval", "probe", "error", "curriculum", "resume"};
  if (std::find(std::begin(kStepped), std::end(kStepped), type) == std::end(kStepped)) return "";
  const auto s = r.find("step");
  if (s == r.end()) return "a " + type + " record without a field 'step'";
  if (!s->is_number_integer() || (s->is_number_unsigned() && s->get<uint64_t>() > uint64_t{INT64_MAX}) ||
      (!s->is_number_unsigned() && s->get<int64_t>() < 0))
    return "field 'step' is " + shown(*s) + ", not a step number (an integer 0.." + std::to_string(INT64_MAX) + ")";
  if (type == "eval") {
    const auto sp = r.find("split");
    if (sp != r.end() && !sp->is_string()) return "field 'split' is " + shown(*sp) + ", not a string";
  }
  const std::vector<const char*> flags = type == "eval"   ? std::vector<const char*>{"final", "zero_memory"}
                                         : type == "step" ? std::vector<const char*>{"non_finite"}
                                                          : std::vector<const char*>{};
  for (const char* k : flags) {
    const auto f = r.find(k);
    if (f != r.end() && !f->is_boolean()) return std::string("field '") + k + "' is " + shown(*f) + ", not true or false";
  }
  return "";
}

bool apply_run_record(RunLog& log, const nlohmann::json& r) {
  if (!record_problem(r).empty()) return false;  // the reader reports it as a gap
  const std::string type = string_or(r, "type");
  auto insert = [&](std::vector<nlohmann::json>& v) {
    // Records arrive in step order; an out-of-order one (evaluations written after the
    // step record of the same step) is placed stably.
    const int64_t s = step_of(r);
    auto it = v.end();
    while (it != v.begin() && step_of(*(it - 1)) > s) --it;
    v.insert(it, r);
  };
  if (type == "step") insert(log.steps);
  else if (type == "eval") insert(log.evals);
  else if (type == "probe") insert(log.probes);
  else if (type == "error") insert(log.errors);
  else if (type == "curriculum") insert(log.curricula);
  else if (type == "resume") {
    const int64_t s = step_of(r);
    auto count = [&] {
      return log.steps.size() + log.evals.size() + log.probes.size() + log.errors.size() + log.curricula.size();
    };
    const size_t before = count();
    drop_after(log.steps, s);
    drop_after(log.evals, s);
    // The end-of-run evaluations at the resume's step belong to a run that goes on (or to one
    // killed while writing them): the resumed run writes its own.
    log.evals.erase(std::remove_if(log.evals.begin(), log.evals.end(),
                                   [&](const nlohmann::json& j) { return j.value("final", false) && step_of(j) == s; }),
                    log.evals.end());
    drop_after(log.probes, s);
    drop_after(log.errors, s);
    drop_after(log.curricula, s);
    ++log.resumes;
    return count() != before;
  }
  return false;
}

// ---- writers --------------------------------------------------------------------------

namespace {

// A distributed run's records name its world size.
nlohmann::json with_world_size(nlohmann::json j, int world_size) {
  if (world_size > 1) j["world_size"] = world_size;
  return j;
}

}  // namespace

nlohmann::json step_record(const StepMetrics& m, double peak_rss_mib) {
  nlohmann::json rec = {{"type", "step"},       {"step", m.step},         {"loss", m.loss},
                        {"accuracy", m.accuracy}, {"lr", m.lr},             {"grad_norm", m.grad_norm},
                        {"tokens_per_s", m.tokens_per_s}, {"seconds", m.seconds}, {"peak_rss_mib", peak_rss_mib}};
  rec["world_size"] = m.world_size;
  if (m.world_size > 1) {
    rec["rank_seconds"] = m.rank_seconds;
    rec["rank_tokens_per_s"] = m.rank_tokens_per_s;
    rec["allreduce_seconds"] = m.allreduce_seconds;
  }
  if (m.non_finite) {
    rec["non_finite"] = true;
    rec["step"] = m.step + 1;  // the step that failed (no update was made)
  }
  return rec;
}

nlohmann::json eval_record(const EvalMetrics& e, int world_size) {
  nlohmann::json j = {{"type", "eval"},         {"step", e.step},        {"split", split_name(e.split)}, {"loss", e.loss},
                      {"accuracy", e.accuracy}, {"exact_match", e.exact_match}, {"examples", e.examples}, {"chars", e.chars},
                      {"bits_per_token", e.bits_per_token}, {"perplexity", e.perplexity}, {"tokens", e.tokens}};
  if (e.segments > 0) j["segments"] = e.segments;
  if (e.split_examples > 0) j["split_examples"] = e.split_examples;
  if (e.zero_memory) j["zero_memory"] = true;
  for (const auto& [k, v] : e.extra) j[k] = v;  // the task's own metrics (e.g. qa: choice_accuracy)
  return with_world_size(std::move(j), world_size);
}

nlohmann::json final_eval_record(const EvalMetrics& e, int world_size) {
  nlohmann::json j = eval_record(e, world_size);
  j["final"] = true;
  return j;
}

nlohmann::json curriculum_record(const CurriculumChange& ch, int world_size) {
  return with_world_size({{"type", "curriculum"}, {"step", ch.step}, {"from", ch.from}, {"to", ch.to}, {"segments", ch.to},
                     {"reason", ch.reason}},
                    world_size);
}

nlohmann::json probe_record(int64_t step, nlohmann::json summary, double scored_loss, int64_t scored_tokens) {
  summary["type"] = "probe";
  summary["step"] = step;
  if (scored_tokens > 0) {
    summary["scored_loss"] = scored_loss;
    summary["scored_tokens"] = scored_tokens;
  }
  return summary;
}

nlohmann::json resume_record(int64_t step, const std::string& checkpoint, int world_size) {
  return {{"type", "resume"}, {"step", step}, {"checkpoint", checkpoint}, {"world_size", world_size}};
}

nlohmann::json error_record(int64_t step, const std::string& message, int world_size) {
  return with_world_size({{"type", "error"}, {"step", step}, {"message", message}}, world_size);
}

// ---- readers --------------------------------------------------------------------------

RunLog parse_run_log(const std::vector<nlohmann::json>& records) {
  RunLog log;
  for (const auto& r : records) apply_run_record(log, r);
  return log;
}

std::string describe_gap(const MetricsGap& g) {
  std::string where;
  if (g.step_before >= 0 && g.step_after >= 0)
    where = " between step " + std::to_string(g.step_before) + " and step " + std::to_string(g.step_after);
  else if (g.step_before >= 0)
    where = " after step " + std::to_string(g.step_before);
  else if (g.step_after >= 0)
    where = " before step " + std::to_string(g.step_after);
  return "skipped bytes " + std::to_string(g.begin) + "-" + std::to_string(g.end) + " of metrics.log (" + g.reason + ")" +
         where;
}

namespace {

// Merges records and gaps in file order: gaps get the steps of the records around them.
// `last_step` carries the step of the last record across calls (the follower's polls).
void place_gaps(RunLog& log, const std::vector<const nlohmann::json*>& records, const std::vector<uint64_t>& offsets,
                const std::vector<io::LogGap>& gaps, int64_t* last_step) {
  size_t g = 0;
  auto add_gap = [&](const io::LogGap& lg) { log.gaps.push_back({lg.begin, lg.end, lg.reason, *last_step, -1}); };
  for (size_t i = 0; i < records.size(); ++i) {
    while (g < gaps.size() && gaps[g].begin < offsets[i]) add_gap(gaps[g++]);
    const int64_t s = records[i] ? step_of(*records[i]) : -1;
    if (s < 0) continue;
    *last_step = s;
    for (auto it = log.gaps.rbegin(); it != log.gaps.rend() && it->step_after < 0; ++it) it->step_after = s;
  }
  while (g < gaps.size()) add_gap(gaps[g++]);
}

}  // namespace

RunLog parse_run_log(const std::vector<nlohmann::json>& records, const io::LogReadResult& read) {
  RunLog log = parse_run_log(records);
  std::vector<const nlohmann::json*> ptrs;
  for (const auto& r : records) ptrs.push_back(&r);
  int64_t last = -1;
  std::vector<uint64_t> offsets = read.offsets;
  offsets.resize(records.size(), read.file_bytes);  // records without offsets: after every gap
  place_gaps(log, ptrs, offsets, read.gaps, &last);
  return log;
}

RunLogFollower::RunLogFollower(std::string session_dir) : dir_(std::move(session_dir)) {}

RunLogFollower::~RunLogFollower() = default;

bool RunLogFollower::poll() {
  bool changed = false;
  if (const std::string why = io::outside_session(dir_, "metrics.log"); !why.empty()) {
    const bool news = problem_ != why;
    problem_ = why;  // a link out of the session is not followed
    if (news) ++version_;
    return news;
  }
  io::LogReadResult r = io::read_framed_log(dir_ + "/metrics.log", offset_);
  if (r.shrunk) {
    log_ = RunLog{};
    offset_ = 0;
    last_step_ = -1;
    ++epoch_;
    changed = true;
    r = io::read_framed_log(dir_ + "/metrics.log", 0);
  }
  std::vector<nlohmann::json> parsed;
  parsed.reserve(r.records.size());
  std::vector<const nlohmann::json*> ptrs;
  std::vector<io::LogGap> gaps = r.gaps;
  for (size_t i = 0; i < r.records.size(); ++i) {
    std::string problem;
    try {
      parsed.push_back(mnemo::io::parse_json(r.records[i]));
      problem = record_problem(parsed.back());  // a {"type":"resume","step":-1} would drop the history
      if (!problem.empty()) parsed.back() = nullptr;
    } catch (const nlohmann::json::exception& e) {
      // A checksummed record that is not JSON: skipped like damage, and named the same way.
      parsed.emplace_back();
      problem = dynamic_cast<const mnemo::io::JsonTooDeep*>(&e) ? "record nests too deeply" : "record is not valid JSON";
    }
    if (!problem.empty()) {
      const uint64_t b = r.offsets[i];
      gaps.push_back({b, b + 12 + r.records[i].size(), problem});
    }
  }
  std::sort(gaps.begin(), gaps.end(), [](const io::LogGap& a, const io::LogGap& b) { return a.begin < b.begin; });
  for (auto& j : parsed) {
    ptrs.push_back(j.is_null() ? nullptr : &j);
    if (!j.is_null() && apply_run_record(log_, j)) ++epoch_;
    changed = true;
  }
  if (!gaps.empty()) changed = true;
  place_gaps(log_, ptrs, r.offsets, gaps, &last_step_);
  offset_ = r.good_bytes;
  // A torn tail may be a record still being written: it is reported when it is still there,
  // unchanged, at the next poll. Anything else will not heal.
  std::string problem;
  if (!r.stop_reason.empty()) {
    if (!r.torn_tail()) problem = r.stop_reason;
    else if (tail_seen_ == r.file_bytes) problem = r.stop_reason;
    tail_seen_ = r.file_bytes;
  } else {
    tail_seen_ = ~uint64_t{0};
  }
  if (problem != problem_) {
    problem_ = problem;
    changed = true;
  }
  if (!session_) {
    try {
      session_ = std::make_unique<io::Session>(io::Session::open(dir_, 3, io::SessionAccess::kReadOnly));
    } catch (const io::SessionError&) {
      // No manifest yet: nothing recorded to list.
    }
  }
  std::vector<int64_t> steps = session_ ? session_->trace_steps() : std::vector<int64_t>{};
  if (steps != trace_steps_) {
    trace_steps_ = std::move(steps);
    changed = true;
  }
  if (changed) ++version_;
  return changed;
}

const std::vector<std::string>& RunLog::curve_names() {
  static const std::vector<std::string> names = {"loss",          "perplexity",  "accuracy",   "lr",
                                                 "grad-norm",     "tokens-per-s", "peak-memory", "probe-loss",
                                                 "slot-types",    "forget-norm", "block-mass", "hash-entropy",
                                                 "segments",      "rank-tokens-per-s", "allreduce-share"};
  return names;
}

DistributedStatus RunLog::distributed_status() const {
  DistributedStatus d;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const auto& r = *it;
    if (!r.contains("world_size")) continue;
    d.step = step_of(r);
    d.world_size = static_cast<int>(num(r, "world_size"));
    auto tp = r.find("rank_tokens_per_s");
    auto sec = r.find("rank_seconds");
    if (tp != r.end() && tp->is_array())
      for (const auto& v : *tp) d.rank_tokens_per_s.push_back(v.is_number() ? v.get<double>() : kNaN);
    if (sec != r.end() && sec->is_array())
      for (const auto& v : *sec) d.rank_seconds.push_back(v.is_number() ? v.get<double>() : kNaN);
    for (size_t k = 0; k < d.rank_seconds.size(); ++k)
      if (d.slowest_rank < 0 || d.rank_seconds[k] > d.rank_seconds[static_cast<size_t>(d.slowest_rank)])
        d.slowest_rank = static_cast<int>(k);
    const double s = num(r, "seconds");
    if (r.contains("allreduce_seconds") && s > 0) d.allreduce_share = num(r, "allreduce_seconds") / s;
    break;
  }
  return d;
}

int64_t RunLog::last_step() const {
  int64_t s = -1;
  for (const auto* v : {&steps, &evals, &probes, &errors, &curricula})
    for (const auto& r : *v) s = std::max(s, step_of(r));
  return s;
}

std::vector<RunLog::CurriculumMark> RunLog::curriculum_marks() const {
  std::vector<CurriculumMark> out;
  for (const auto& r : curricula) {
    CurriculumMark m;
    m.step = step_of(r);
    m.from = int_or(r, "from", 0);
    m.to = int_or(r, "to", 0);
    m.reason = string_or(r, "reason");
    out.push_back(std::move(m));
  }
  std::stable_sort(out.begin(), out.end(), [](const CurriculumMark& a, const CurriculumMark& b) { return a.step < b.step; });
  return out;
}

bool RunLog::final_shadowed(const nlohmann::json& r) const {
  if (!r.value("final", false)) return false;
  const std::string split = r.value("split", std::string());
  const bool zero = r.value("zero_memory", false);
  const int64_t at = step_of(r);
  return std::any_of(evals.begin(), evals.end(), [&](const nlohmann::json& o) {
    return !o.value("final", false) && step_of(o) == at && o.value("split", std::string()) == split &&
           o.value("zero_memory", false) == zero;
  });
}

std::vector<FinalEval> RunLog::final_results() const {
  std::vector<FinalEval> out;
  for (const auto& r : evals) {
    if (!r.value("final", false)) continue;
    FinalEval f;
    f.step = step_of(r);
    f.split = r.value("split", std::string());
    f.zero_memory = r.value("zero_memory", false);
    f.loss = num(r, "loss");
    f.accuracy = num(r, "accuracy");
    f.bits_per_token = r.contains("bits_per_token") ? num(r, "bits_per_token") : f.loss / std::log(2.0);
    // A later record of the same evaluation (a rewritten end of run) replaces the earlier one.
    auto it = std::find_if(out.begin(), out.end(), [&](const FinalEval& o) {
      return o.split == f.split && o.zero_memory == f.zero_memory;
    });
    if (it != out.end()) *it = f;
    else out.push_back(f);
  }
  auto rank = [](const FinalEval& f) {
    const int s = f.split == "valid" ? 0 : f.split == "test" ? 1 : 2;
    return std::make_pair(s, f.zero_memory ? 1 : 0);
  };
  std::stable_sort(out.begin(), out.end(), [&](const FinalEval& a, const FinalEval& b) { return rank(a) < rank(b); });
  return out;
}

std::string describe_final(const FinalEval& f) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s%s: loss %.4f", f.split.c_str(), f.zero_memory ? " (memory zeroed)" : "", f.loss);
  std::string out = buf;
  if (std::isfinite(f.accuracy)) {  // sessions written elsewhere may log no accuracy
    std::snprintf(buf, sizeof buf, ", accuracy %.4f", f.accuracy);
    out += buf;
  }
  return out;
}

std::vector<Curve> RunLog::curves(const std::string& name) const {
  std::vector<Curve> out;
  // A curve's points are the periodic evaluations, and the final ones no periodic one stands for.
  auto split_is = [this](const char* s, bool zero_memory) {
    return [this, s, zero_memory](const nlohmann::json& r) {
      return r.value("split", std::string()) == s && r.value("zero_memory", false) == zero_memory && !final_shadowed(r);
    };
  };
  if (name == "loss" || name == "perplexity" || name == "accuracy") {
    const char* field = name == "accuracy" ? "accuracy" : "loss";
    Curve train = field_curve(steps, "train", field);
    Curve valid = field_curve(evals, "valid", field, split_is("valid", false));
    Curve zeroed = field_curve(evals, kValidZeroMemoryCurve, field, split_is("valid", true));
    if (name == "perplexity")
      for (auto* c : {&train, &valid, &zeroed})
        for (double& y : c->y) y = std::exp(y);
    push_nonempty(out, std::move(train));
    push_nonempty(out, std::move(valid));
    push_nonempty(out, std::move(zeroed));
  } else if (name == "segments") {
    // The curriculum's segment count: a step function from each change's step on.
    Curve c;
    c.name = "segments";
    for (const auto& r : curricula) {
      const double to = num(r, "to");
      if (c.x.empty()) {
        c.x.push_back(0.0);
        c.y.push_back(num(r, "from"));
      }
      c.x.push_back(static_cast<double>(step_of(r)));
      c.y.push_back(c.y.back());
      c.x.push_back(static_cast<double>(step_of(r)));
      c.y.push_back(to);
    }
    if (!c.x.empty()) {
      const double end = static_cast<double>(std::max<int64_t>(last_step(), static_cast<int64_t>(c.x.back())));
      c.x.push_back(end);
      c.y.push_back(c.y.back());
    }
    push_nonempty(out, std::move(c));
  } else if (name == "lr") {
    push_nonempty(out, field_curve(steps, "learning rate", "lr"));
  } else if (name == "grad-norm") {
    push_nonempty(out, field_curve(steps, "gradient norm", "grad_norm"));
  } else if (name == "tokens-per-s") {
    push_nonempty(out, field_curve(steps, "tokens/s", "tokens_per_s"));
  } else if (name == "rank-tokens-per-s") {
    // A distributed run: each rank's tokens/s over its forward/backward (docs/training.md#distributed).
    std::vector<Curve> ranks;
    for (const auto& r : steps) {
      auto it = r.find("rank_tokens_per_s");
      if (it == r.end() || !it->is_array()) continue;
      if (ranks.size() < it->size()) ranks.resize(it->size());
      for (size_t k = 0; k < it->size(); ++k) {
        ranks[k].name = "rank " + std::to_string(k);
        ranks[k].x.push_back(static_cast<double>(step_of(r)));
        ranks[k].y.push_back((*it)[k].is_number() ? (*it)[k].get<double>() : kNaN);
      }
    }
    for (auto& c : ranks) push_nonempty(out, std::move(c));
  } else if (name == "allreduce-share") {
    Curve c;
    c.name = "allreduce share of step time";
    for (const auto& r : steps) {
      if (!r.contains("allreduce_seconds")) continue;
      const double sec = num(r, "seconds");
      c.x.push_back(static_cast<double>(step_of(r)));
      c.y.push_back(sec > 0 ? num(r, "allreduce_seconds") / sec : kNaN);
    }
    push_nonempty(out, std::move(c));
  } else if (name == "peak-memory") {
    push_nonempty(out, field_curve(steps, "peak RSS (MiB)", "peak_rss_mib"));
    push_nonempty(out, field_curve(steps, "peak GPU (MiB)", "peak_gpu_mib"));
  } else if (name == "probe-loss") {
    // A synthetic task's probe also has the loss over the tokens its task scores: the plain
    // mean includes random symbols no model can predict (core/train/recorder.h).
    push_nonempty(out, field_curve(probes, "probe loss", "loss"));
    push_nonempty(out, field_curve(probes, "probe loss, scored tokens", "scored_loss"));
  } else if (name == "slot-types" || name == "forget-norm") {
    const char* obj = name == "slot-types" ? "slot_types" : "forget_norm";
    const std::vector<const char*> parts = name == "slot-types" ? std::vector<const char*>{"retain", "mix", "overwrite"}
                                                                : std::vector<const char*>{"min", "p10", "p50", "p90", "max"};
    for (const char* p : parts) {
      Curve c;
      c.name = p;
      for (const auto& r : probes) {
        auto it = r.find(obj);
        if (it == r.end() || !it->is_object()) continue;
        c.x.push_back(static_cast<double>(step_of(r)));
        c.y.push_back(num(*it, p));
      }
      push_nonempty(out, std::move(c));
    }
  } else if (name == "block-mass") {
    static const char* kParts[3] = {"reading", "writing", "rewriting"};
    std::map<std::string, std::array<Curve, 3>> by_layer;
    for (const auto& r : probes) {
      auto it = r.find("rmt_block_mass");
      if (it == r.end() || !it->is_object()) continue;
      for (const auto& [layer, v] : it->items()) {
        auto& cs = by_layer[layer];
        for (int b = 0; b < 3; ++b) {
          cs[b].name = "layer " + layer + " " + kParts[b];
          cs[b].x.push_back(static_cast<double>(step_of(r)));
          cs[b].y.push_back(v.is_array() && v.size() > static_cast<size_t>(b) && v[b].is_number() ? v[b].get<double>() : kNaN);
        }
      }
    }
    for (auto& [layer, cs] : by_layer)
      for (auto& c : cs) push_nonempty(out, std::move(c));
  } else if (name == "hash-entropy") {
    // First and last table of every hashed projection (the paper's Figure 4 view).
    std::map<std::string, std::array<Curve, 2>> by_path;
    for (const auto& r : probes) {
      auto it = r.find("hash_entropy");
      if (it == r.end() || !it->is_object()) continue;
      for (const auto& [path, v] : it->items()) {
        if (!v.is_array() || v.empty()) continue;
        auto& cs = by_path[path];
        const size_t last = v.size() - 1;
        cs[0].name = path + " table 0";
        cs[1].name = path + " table " + std::to_string(last);
        for (int k = 0; k < 2; ++k) {
          const auto& e = v[k == 0 ? 0 : last];
          cs[k].x.push_back(static_cast<double>(step_of(r)));
          cs[k].y.push_back(e.is_number() ? e.get<double>() : kNaN);
        }
      }
    }
    for (auto& [path, cs] : by_path) {
      push_nonempty(out, std::move(cs[0]));
      if (cs[1].name != out.back().name) push_nonempty(out, std::move(cs[1]));
    }
  } else {
    std::string known;
    for (const auto& n : curve_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown curve '" + name + "'; known: " + known);
  }
  return out;
}

}  // namespace mnemo
