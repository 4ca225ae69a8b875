#include "app/panels/dashboard.h"

#include "app/cmd_train.h"
#include "app/gui/replay.h"
#include "core/io/atomic_file.h"
#include "core/train/trainer.h"

#include <imgui_stdlib.h>

#include <fstream>
#include <sstream>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace mnemo::app {

namespace {

const ImU32 kColors[] = {IM_COL32(31, 119, 180, 255),  IM_COL32(255, 127, 14, 255), IM_COL32(44, 160, 44, 255),
                         IM_COL32(214, 39, 40, 255),   IM_COL32(148, 103, 189, 255), IM_COL32(140, 86, 75, 255),
                         IM_COL32(227, 119, 194, 255), IM_COL32(127, 127, 127, 255), IM_COL32(188, 189, 34, 255),
                         IM_COL32(23, 190, 207, 255)};

const char* chart_title(const std::string& name) {
  if (name == "loss") return "Loss";
  if (name == "perplexity") return "Perplexity";
  if (name == "accuracy") return "Accuracy";
  if (name == "lr") return "Learning rate";
  if (name == "grad-norm") return "Gradient norm";
  if (name == "tokens-per-s") return "Tokens/s";
  if (name == "peak-memory") return "Peak memory (MiB)";
  if (name == "probe-loss") return "Probe loss";
  if (name == "slot-types") return "Slot types";
  if (name == "forget-norm") return "Forgetting norms";
  if (name == "block-mass") return "RMT block masses";
  if (name == "hash-entropy") return "Bucket entropy";
  return name.c_str();
}

}  // namespace

void DashboardPanel::open(const std::string& dir, ReplayController* replay) {
  main_ = Source{};
  main_.dir = dir;
  main_.follower = std::make_unique<RunLogFollower>(dir);
  replay_ = replay;
  recording_index_ = -1;
  follow_latest_ = true;
  poll();
}

void DashboardPanel::compare_with(const std::string& dir) {
  other_ = Source{};
  if (dir.empty()) return;
  other_.dir = dir;
  other_.follower = std::make_unique<RunLogFollower>(dir);
  poll();
}

void DashboardPanel::load_synthetic(int curves, int64_t points) {
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

bool DashboardPanel::edit_config(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    if (error) *error = "cannot open config '" + path + "'; check the path (e.g. sessions/copy-rmt-tiny.json)";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > (1 << 20)) {
    if (error) *error = "config '" + path + "' is larger than 1 MiB; it is not a training config";
    return false;
  }
  edit_text_ = ss.str();
  std::string base = path;
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) base.resize(base.size() - 5);
  edit_save_as_ = base + "-edited.json";
  edit_error_.clear();
  editing_ = true;
  return true;
}

bool DashboardPanel::save_config(const std::string& text, const std::string& save_as, std::string* error) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
    TrainingConfig::from_json(j).validate();
  } catch (const nlohmann::json::parse_error& e) {
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
  std::snprintf(train_config_, sizeof train_config_, "%s", save_as.c_str());
  editing_ = false;
  return true;
}

bool DashboardPanel::start_training(const std::string& config, const std::string& out, std::string* error) {
  const std::string dir = out.empty() ? default_session_dir(config) : out;
  const bool resume = config.empty();
  if (!train_.start(config, dir, resume, {}, error)) return false;
  waiting_for_ = dir;
  return true;
}

void DashboardPanel::poll() {
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
  if (replay_ && main_.follower && !main_.follower->trace_steps().empty()) {
    const auto& steps = main_.follower->trace_steps();
    const int last = static_cast<int>(steps.size()) - 1;
    if (follow_latest_ && recording_index_ != last) {
      if (replay_->select_recording(steps[static_cast<size_t>(last)])) recording_index_ = last;
    }
  }
}

void DashboardPanel::sync(Source& s) {
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
  fresh.evals.assign(log.evals.begin() + static_cast<std::ptrdiff_t>(std::min(s.evals, log.evals.size())), log.evals.end());
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

void DashboardPanel::draw_header(PanelContext& ctx) {
  if (!main_.follower) {
    ImGui::TextDisabled("%s", main_.dir.empty() ? "No session: start with `mnemoscope gui --session DIR`" : main_.dir.c_str());
    return;
  }
  const RunLog& log = main_.follower->log();
  ImGui::Text("%s", main_.dir.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("step %lld, %zu evaluations, %zu recordings%s", static_cast<long long>(std::max<int64_t>(0, log.last_step())),
                      log.evals.size(), main_.follower->trace_steps().size(),
                      log.resumes > 0 ? (", resumed " + std::to_string(log.resumes) + "x").c_str() : "");
  for (const auto& e : log.errors)
    ImGui::TextColored(ImVec4(0.9f, 0.2f, 0.2f, 1.f), "%s", e.value("message", std::string("error")).c_str());
  if (!main_.follower->problem().empty())
    ImGui::TextColored(ImVec4(0.9f, 0.5f, 0.1f, 1.f), "metrics.log: %s", main_.follower->problem().c_str());
  if (!error_.empty()) ImGui::TextColored(ImVec4(0.9f, 0.2f, 0.2f, 1.f), "%s", error_.c_str());
  if (!ctx.preview) {
    ImGui::SameLine();
    const char* label = "Export\xE2\x80\xA6";
    const float bw = ImGui::CalcTextSize(label).x + ImGui::GetStyle().FramePadding.x * 2.f;
    const float x = ImGui::GetWindowContentRegionMax().x - bw;
    if (x >= ImGui::GetCursorPosX()) ImGui::SetCursorPosX(x);
    else ImGui::NewLine();
    if (ImGui::SmallButton(label)) ctx.requests.export_panel = static_cast<int>(PanelId::kDashboard);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Write every chart as PNG (2x), SVG and CSV (all points) into a folder");
  }
  // Compare with a second session (dashed curves).
  ImGui::SetNextItemWidth(std::max(120.f, ImGui::GetContentRegionAvail().x * 0.4f));
  ImGui::InputTextWithHint("##compare", "compare with session directory", compare_buf_, sizeof compare_buf_);
  ImGui::SameLine();
  if (ImGui::SmallButton(other_.follower ? "Replace" : "Compare")) {
    const std::string dir = compare_buf_;
    if (!dir.empty()) {
      try {
        compare_with(dir);
        error_.clear();
      } catch (const std::exception& e) {
        error_ = e.what();
      }
    }
  }
  if (other_.follower) {
    ImGui::SameLine();
    if (ImGui::SmallButton("Clear")) compare_with("");
    ImGui::SameLine();
    ImGui::TextDisabled("dashed: %s", other_.dir.c_str());
  }
}

void DashboardPanel::draw_recordings(PanelContext& ctx) {
  if (!main_.follower || !replay_) return;
  const auto& steps = main_.follower->trace_steps();
  if (steps.empty()) {
    ImGui::TextDisabled("No probe recordings yet (train.record_every)");
    return;
  }
  int idx = std::clamp(recording_index_, 0, static_cast<int>(steps.size()) - 1);
  ImGui::SetNextItemWidth(std::max(120.f, ImGui::GetContentRegionAvail().x - 260.f));
  char label[64];
  std::snprintf(label, sizeof label, "step %lld", static_cast<long long>(steps[static_cast<size_t>(idx)]));
  if (ImGui::SliderInt("##recording", &idx, 0, static_cast<int>(steps.size()) - 1, label) && !ctx.preview) {
    follow_latest_ = idx == static_cast<int>(steps.size()) - 1;
    if (replay_->select_recording(steps[static_cast<size_t>(idx)])) recording_index_ = idx;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Training step whose probe recording the map panels show");
  ImGui::SameLine();
  ImGui::Checkbox("latest", &follow_latest_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Follow the newest recording as training writes them");
}

void DashboardPanel::draw_training(PanelContext& ctx) {
  const TrainingProcess::State st = train_.poll();
  const bool going = st == TrainingProcess::State::kRunning || st == TrainingProcess::State::kPaused;
  if (!ImGui::CollapsingHeader("Train", main_.follower || ctx.preview ? 0 : ImGuiTreeNodeFlags_DefaultOpen)) return;
  ImGui::BeginDisabled(going || ctx.preview);
  ImGui::SetNextItemWidth(std::max(120.f, ImGui::GetContentRegionAvail().x * 0.35f));
  ImGui::InputText("config", train_config_, sizeof train_config_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("A training config (sessions/*.json)");
  ImGui::SameLine();
  if (ImGui::SmallButton("Edit")) {
    std::string err;
    if (!edit_config(train_config_, &err)) ctx.requests.errors.push_back("Config: " + err);
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("Edit the config and save it under a new name");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(120.f, ImGui::GetContentRegionAvail().x * 0.5f));
  ImGui::InputTextWithHint("session", "default: ~/.local/share/mnemoscope/sessions/<config name>", train_out_, sizeof train_out_);
  ImGui::SameLine();
  if (ImGui::SmallButton("Start")) {
    std::string err;
    if (!start_training(train_config_, train_out_, &err)) ctx.requests.errors.push_back("Training: " + err);
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Runs `mnemoscope train --config CONFIG --out SESSION` and follows it here");
  if (st == TrainingProcess::State::kExited) {
    ImGui::SameLine();
    if (ImGui::SmallButton("Continue")) {
      std::string err;
      if (!start_training("", train_.out_dir(), &err)) ctx.requests.errors.push_back("Training: " + err);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Resume the last run from its latest checkpoint (train --resume)");
  }
  ImGui::EndDisabled();
  if (editing_ && !going && !ctx.preview) {
    ImGui::InputTextMultiline("##config-text", &edit_text_,
                              ImVec2(-1.f, ImGui::GetTextLineHeight() * std::min(16.f, std::max(6.f, ImGui::GetContentRegionAvail().y / ImGui::GetTextLineHeight() * 0.4f))));
    ImGui::SetNextItemWidth(std::max(160.f, ImGui::GetContentRegionAvail().x * 0.5f));
    ImGui::InputText("save as", &edit_save_as_);
    ImGui::SameLine();
    if (ImGui::SmallButton("Save")) save_config(edit_text_, edit_save_as_, &edit_error_);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Checks every field, then writes the file (atomically) and uses it for Start");
    ImGui::SameLine();
    if (ImGui::SmallButton("Cancel")) editing_ = false;
    if (!edit_error_.empty()) ImGui::TextColored(ImVec4(0.9f, 0.2f, 0.2f, 1.f), "%s", edit_error_.c_str());
  }
  if (going) {
    if (st == TrainingProcess::State::kRunning ? ImGui::SmallButton("Pause") : ImGui::SmallButton("Resume"))
      st == TrainingProcess::State::kRunning ? train_.pause() : train_.resume();
    ImGui::SameLine();
    if (ImGui::SmallButton("Checkpoint now")) train_.checkpoint_now();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Save a checkpoint after the current step");
    ImGui::SameLine();
    if (ImGui::SmallButton("Stop")) train_.stop();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Stop after the current step and save (continue later with Continue)");
    ImGui::SameLine();
  }
  if (st != TrainingProcess::State::kIdle) {
    const char* what = st == TrainingProcess::State::kRunning ? "running"
                       : st == TrainingProcess::State::kPaused ? "paused"
                                                                : nullptr;
    std::string status = what ? std::string(what) : "exited with code " + std::to_string(train_.exit_code());
    if (!what) {
      const int c = train_.exit_code();
      status += c == 0 ? " (done)" : c == 130 ? " (stopped, saved)" : c == 1 ? " (stopped: see the log)" : c == 2 ? " (bad input)" : "";
    }
    ImGui::TextDisabled("%s: %s", status.c_str(), train_.last_line().c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("log: %s", train_.log_path().c_str());
  }
}

void DashboardPanel::draw(PanelContext& ctx) {
  if (!ctx.preview && ImGui::GetTime() >= next_poll_) {
    next_poll_ = ImGui::GetTime() + 0.5;
    poll();
  }
  draw_training(ctx);
  draw_header(ctx);
  draw_recordings(ctx);
  std::vector<std::string> names;
  for (const auto& n : RunLog::curve_names())
    if (main_.charts.count(n) || other_.charts.count(n)) names.push_back(n);
  if (names.empty()) {
    ImGui::TextDisabled("No curves yet");
    return;
  }
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const int cols = avail.x > 1300 ? 4 : (avail.x > 900 ? 3 : (avail.x > 520 ? 2 : 1));
  const int rows = (static_cast<int>(names.size()) + cols - 1) / cols;
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float w = std::max(80.f, (avail.x - gap * static_cast<float>(cols - 1)) / static_cast<float>(cols));
  const float h = std::max(110.f, std::min(320.f, (avail.y - ImGui::GetStyle().ItemSpacing.y * static_cast<float>(rows)) /
                                                      static_cast<float>(rows)));
  ImGui::BeginChild("##charts", ImVec2(0, 0), false);
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<viz::ui::CurveSeries> series;
    int color = 0;
    for (const Source* s : {&main_, &other_}) {
      auto it = s->charts.find(names[i]);
      if (it == s->charts.end()) continue;
      for (size_t k = 0; k < it->second.series.size(); ++k) {
        viz::ui::CurveSeries cs;
        cs.data = &it->second.series[k];
        cs.name = it->second.names[k] + (s == &other_ ? " (B)" : "");
        cs.color = s == &other_ ? kColors[k % 10] : kColors[color++ % 10];
        cs.dashed = s == &other_;
        series.push_back(std::move(cs));
      }
    }
    auto& view = views_[names[i]];
    if (names[i] == "perplexity") view.log_y = true;
    if (i % static_cast<size_t>(cols) != 0) ImGui::SameLine();
    viz::ui::draw_curves(names[i].c_str(), chart_title(names[i]), series, ImVec2(w, h), &view);
  }
  ImGui::EndChild();
}

}  // namespace mnemo::app
