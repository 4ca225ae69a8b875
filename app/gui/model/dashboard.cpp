#include "app/gui/model/dashboard.h"

#include <cstdio>

#include "core/io/json_file.h"
#include "app/gui/model/replay.h"
#include "core/io/atomic_file.h"
#include "core/io/session.h"
#include "core/train/trainer.h"
#include "core/io/read_file.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace mnemo::app {

void DashboardModel::open(const std::string& dir, ReplayController* replay) {
  main_ = Source{};
  main_.dir = dir;
  main_.follower = std::make_unique<RunLogFollower>(dir);
  replay_ = replay;
  recording_index_ = -1;
  follow_latest_ = true;
  poll();
}

void DashboardModel::compare_with(const std::string& dir) {
  other_ = Source{};
  if (dir.empty()) return;
  other_.dir = dir;
  other_.follower = std::make_unique<RunLogFollower>(dir);
  poll();
}

void DashboardModel::load_synthetic(int curves, int64_t points) {
  main_ = Source{};
  main_.dir = "(synthetic)";
  const char* names[] = {"loss", "accuracy", "grad-norm", "tokens-per-s"};
  for (int c = 0; c < curves; ++c) {
    Chart& ch = main_.charts[names[c % 4]];
    ch.names.push_back("series " + std::to_string(c));
    ch.series.emplace_back();
    auto& s = ch.series.back();
    for (int64_t i = 0; i < points; ++i) {
      float y = 2.f * std::exp(-static_cast<float>(i) / static_cast<float>(points / 4 + 1)) +
                0.1f * std::sin(static_cast<float>(i) * 0.37f + static_cast<float>(c));
      if (i % 100000 == 99999) y = std::numeric_limits<float>::quiet_NaN();
      s.append(static_cast<double>(i), y);
    }
  }
}

const std::vector<int64_t>& DashboardModel::recording_steps() const {
  static const std::vector<int64_t> none;
  return main_.follower ? main_.follower->trace_steps() : none;
}

bool DashboardModel::select_recording(int index) {
  const auto& steps = recording_steps();
  if (!replay_ || steps.empty()) return false;
  index = std::clamp(index, 0, static_cast<int>(steps.size()) - 1);
  if (!replay_->select_recording(steps[static_cast<size_t>(index)])) return false;
  recording_index_ = index;
  return true;
}

bool DashboardModel::edit_config(const std::string& path, std::string* error) {
  std::string text;
  if (const std::string why = io::read_regular_file(path, &text, 1u << 20); !why.empty()) {
    if (error)
      *error = why == io::kNoSuchFile ? "cannot open config '" + path + "'; check the path (e.g. sessions/copy-rmt-tiny.json)"
               : why.find("limit") != std::string::npos
                   ? "config '" + path + "' is larger than 1 MiB; it is not a training config"
                   : "config '" + path + "' " + why;
    return false;
  }
  edit_text_ = std::move(text);
  std::string base = path;
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) base.resize(base.size() - 5);
  edit_save_as_ = base + "-edited.json";
  edit_error_.clear();
  editing_ = true;
  return true;
}

bool DashboardModel::save_config(const std::string& text, const std::string& save_as, std::string* error) {
  nlohmann::json j;
  try {
    j = mnemo::io::parse_json(text);
    TrainingConfig::from_json(j).validate();
  } catch (const nlohmann::json::exception& e) {
    if (error) *error = std::string("not valid JSON: ") + e.what();
    return false;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
  if (save_as.empty()) {
    if (error) *error = "give a file name to save the config as";
    return false;
  }
  try {
    io::write_file_atomic(save_as, j.dump(2) + "\n");
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
  train_config_ = save_as;
  editing_ = false;
  return true;
}

std::string distributed_summary(const DistributedStatus& d) {
  if (d.world_size <= 1) return "";
  auto rate = [](double v) {
    char b[32];
    if (!(v >= 0)) return std::string("?");
    if (v >= 1e6) std::snprintf(b, sizeof b, "%.2fM", v / 1e6);
    else if (v >= 1e3) std::snprintf(b, sizeof b, "%.1fk", v / 1e3);
    else std::snprintf(b, sizeof b, "%.0f", v);
    return std::string(b);
  };
  std::string s = std::to_string(d.world_size) + " ranks";
  for (size_t r = 0; r < d.rank_tokens_per_s.size(); ++r)
    s += " \xC2\xB7 rank " + std::to_string(r) + " " + rate(d.rank_tokens_per_s[r]) + " tok/s";
  if (d.slowest_rank >= 0) s += " \xC2\xB7 slowest: rank " + std::to_string(d.slowest_rank);
  if (d.allreduce_share >= 0) {
    char b[64];
    std::snprintf(b, sizeof b, " \xC2\xB7 allreduce %.0f%% of the step", 100.0 * d.allreduce_share);
    s += b;
  }
  return s;
}

std::vector<std::string> DashboardModel::start_sets() const {
  if (probe_example_ < 0) return {};
  return {"train.record_example=" + std::to_string(probe_example_)};
}

bool DashboardModel::start_training(const std::string& config, const std::string& out, std::string* error) {
  const std::string dir = out.empty() ? io::default_session_dir(config) : out;
  const bool resume = config.empty();
  // A resumed run keeps the probe it recorded so far (its manifest's config).
  if (!train_.start(config, dir, resume, resume ? std::vector<std::string>{} : start_sets(), error, train_nproc_)) return false;
  waiting_for_ = dir;
  return true;
}

void DashboardModel::poll() {
  train_.poll();
  if (!waiting_for_.empty() && ::access((waiting_for_ + "/manifest.json").c_str(), F_OK) == 0) {
    const std::string dir = waiting_for_;
    waiting_for_.clear();
    try {
      if (replay_) replay_->reopen(dir);
      open(dir, replay_);
      error_.clear();
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }
  for (Source* s : {&main_, &other_}) {
    if (!s->follower) continue;
    try {
      s->follower->poll();
      sync(*s);
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }
  // Follow the newest recording.
  const auto& steps = recording_steps();
  if (replay_ && !steps.empty()) {
    const int last = static_cast<int>(steps.size()) - 1;
    if (follow_latest_ && recording_index_ != last) select_recording(last);
  }
}

void DashboardModel::sync(Source& s) {
  const RunLogFollower& f = *s.follower;
  if (f.version() == s.synced_version) return;
  if (f.epoch() != s.synced_epoch) {  // records were dropped: rebuild every chart
    s.charts.clear();
    s.steps = s.evals = s.probes = 0;
    s.synced_epoch = f.epoch();
  }
  const RunLog& log = f.log();
  RunLog fresh;
  fresh.steps.assign(log.steps.begin() + static_cast<std::ptrdiff_t>(std::min(s.steps, log.steps.size())), log.steps.end());
  // New evaluations, less the final ones a periodic one of the whole log (maybe drawn at an
  // earlier poll) stands for: `fresh` alone cannot tell.
  for (auto it = log.evals.begin() + static_cast<std::ptrdiff_t>(std::min(s.evals, log.evals.size())); it != log.evals.end(); ++it)
    if (!log.final_shadowed(*it)) fresh.evals.push_back(*it);
  fresh.probes.assign(log.probes.begin() + static_cast<std::ptrdiff_t>(std::min(s.probes, log.probes.size())), log.probes.end());
  s.steps = log.steps.size();
  s.evals = log.evals.size();
  s.probes = log.probes.size();
  for (const auto& name : RunLog::curve_names()) {
    for (const Curve& c : fresh.curves(name)) {
      Chart& ch = s.charts[name];
      auto it = std::find(ch.names.begin(), ch.names.end(), c.name);
      if (it == ch.names.end()) {
        ch.names.push_back(c.name);
        ch.series.emplace_back();
        it = ch.names.end() - 1;
      }
      viz::MinMaxSeries& ms = ch.series[static_cast<size_t>(it - ch.names.begin())];
      for (size_t i = 0; i < c.x.size(); ++i) {
        if (!ms.empty() && c.x[i] < ms.x(ms.size() - 1)) continue;  // out of order: not drawable
        ms.append(c.x[i], static_cast<float>(c.y[i]));
      }
    }
  }
  s.synced_version = f.version();
}

}  // namespace mnemo::app
