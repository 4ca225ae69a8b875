#include "app/gui/panels/dashboard.h"

#include "app/figures/palette.h"
#include "app/figures/run_curves.h"
#include "app/gui/panels/widgets/widgets.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

void DashboardPanel::draw_header(PanelContext& ctx) {
  if (!model_.main().follower) {
    ImGui::TextDisabled("%s", model_.main().dir.empty() ? "No session: start with `mnemoscope gui --session DIR`" : model_.main().dir.c_str());
    return;
  }
  const RunLog& log = model_.main().follower->log();
  ImGui::Text("%s", model_.main().dir.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("step %lld, %zu evaluations, %zu recordings%s", static_cast<long long>(std::max<int64_t>(0, log.last_step())),
                      log.evals.size(), model_.main().follower->trace_steps().size(),
                      log.resumes > 0 ? (", resumed " + std::to_string(log.resumes) + "x").c_str() : "");
  const std::string dist = distributed_summary(log.distributed_status());
  if (!dist.empty()) {
    ImGui::TextDisabled("%s", dist.c_str());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("A distributed run (rank 0's session): each rank's tokens/s over its forward/backward at the "
                        "newest step, the rank that took longest, and the gradient allreduce's share of rank 0's step");
  }
  // The end-of-run evaluations: one line, each split with and without the memory.
  const auto finals = log.final_results();
  if (!finals.empty()) {
    std::string line = "final (step " + std::to_string(finals.front().step) + "): ";
    std::string tip;
    char buf[96];
    for (size_t i = 0; i < finals.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%s%s%s loss %.4f", i ? " \xC2\xB7 " : "", finals[i].split.c_str(),
                    finals[i].zero_memory ? " (memory zeroed)" : "", finals[i].loss);
      line += buf;
      if (std::isfinite(finals[i].accuracy)) {  // a session that logs no accuracy shows none, not "nan"
        std::snprintf(buf, sizeof buf, ", acc %.3f", finals[i].accuracy);
        line += buf;
      }
      tip += describe_final(finals[i]) + "\n";
    }
    ImGui::TextWrapped("%s", line.c_str());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("The run's end-of-run evaluations (metrics.log records with \"final\": true); memory zeroed: the "
                        "same weights with every memory tensor zeroed between segments\n%s",
                        tip.c_str());
  }
  for (const auto& e : log.errors)
    ImGui::TextColored(ImVec4(0.9f, 0.2f, 0.2f, 1.f), "%s", e.value("message", std::string("error")).c_str());
  // Damage the reader skipped (the curves show each gap as an orange band) and a tail that
  // does not form a record, named as `mnemoscope export` names them.
  const size_t shown = std::min<size_t>(log.gaps.size(), 3);
  for (size_t g = 0; g < shown; ++g)
    ImGui::TextColored(ImVec4(0.9f, 0.5f, 0.1f, 1.f), "%s", describe_gap(log.gaps[g]).c_str());
  if (log.gaps.size() > shown) {
    ImGui::TextColored(ImVec4(0.9f, 0.5f, 0.1f, 1.f), "... and %zu more gaps in metrics.log", log.gaps.size() - shown);
    if (ImGui::IsItemHovered()) {
      std::string all;
      for (const auto& g : log.gaps) all += describe_gap(g) + "\n";
      ImGui::SetTooltip("%s", all.c_str());
    }
  }
  if (!model_.main().follower->problem().empty())
    ImGui::TextColored(ImVec4(0.9f, 0.5f, 0.1f, 1.f), "metrics.log stops early: %s", model_.main().follower->problem().c_str());
  if (!model_.error().empty()) ImGui::TextColored(ImVec4(0.9f, 0.2f, 0.2f, 1.f), "%s", model_.error().c_str());
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
  if (ImGui::SmallButton(model_.other().follower ? "Replace" : "Compare")) {
    const std::string dir = compare_buf_;
    if (!dir.empty()) {
      try {
        model_.compare_with(dir);
        model_.set_error("");
      } catch (const std::exception& e) {
        model_.set_error(e.what());
      }
    }
  }
  if (model_.other().follower) {
    ImGui::SameLine();
    if (ImGui::SmallButton("Clear")) model_.compare_with("");
    ImGui::SameLine();
    ImGui::TextDisabled("dashed: %s", model_.other().dir.c_str());
  }
}

void DashboardPanel::draw_recordings(PanelContext& ctx) {
  if (!model_.main().open() || !model_.has_replay()) return;
  const auto& steps = model_.recording_steps();
  if (steps.empty()) {
    ImGui::TextDisabled("No probe recordings yet (train.record_every)");
    return;
  }
  int idx = std::clamp(model_.recording_index(), 0, static_cast<int>(steps.size()) - 1);
  ImGui::SetNextItemWidth(std::max(120.f, ImGui::GetContentRegionAvail().x - 260.f));
  char label[64];
  std::snprintf(label, sizeof label, "step %lld", static_cast<long long>(steps[static_cast<size_t>(idx)]));
  if (ImGui::SliderInt("##recording", &idx, 0, static_cast<int>(steps.size()) - 1, label) && !ctx.preview) {
    model_.set_follow_latest(idx == static_cast<int>(steps.size()) - 1);
    model_.select_recording(idx);
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Training step whose probe recording the map panels show");
  ImGui::SameLine();
  bool latest = model_.follow_latest();
  if (ImGui::Checkbox("latest", &latest)) model_.set_follow_latest(latest);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Follow the newest recording as training writes them");
}

void DashboardPanel::draw_training(PanelContext& ctx) {
  TrainingProcess& train = model_.training();
  const TrainingProcess::State st = train.poll();
  const bool going = st == TrainingProcess::State::kRunning || st == TrainingProcess::State::kPaused;
  if (!ImGui::CollapsingHeader("Train", model_.main().follower || ctx.preview ? 0 : ImGuiTreeNodeFlags_DefaultOpen)) return;
  ImGui::BeginDisabled(going || ctx.preview);
  ImGui::SetNextItemWidth(std::max(120.f, ImGui::GetContentRegionAvail().x * 0.35f));
  std::string config = model_.train_config();
  if (ImGui::InputText("config", &config)) model_.set_train_config(config);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("A training config (sessions/*.json)");
  ImGui::SameLine();
  if (ImGui::SmallButton("Edit")) {
    std::string err;
    if (!model_.edit_config(model_.train_config(), &err)) ctx.requests.errors.push_back("Config: " + err);
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("Edit the config and save it under a new name");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(120.f, ImGui::GetContentRegionAvail().x * 0.5f));
  ImGui::InputTextWithHint("session", "default: ~/.local/share/mnemoscope/sessions/<config name>", train_out_, sizeof train_out_);
  // The row wraps where the next field would not fit (at 1280x720 the probe example's label and
  // Start ran off the panel's right edge, out of reach).
  auto same_line_if_room = [](float w) {
    ImGui::SameLine();
    if (ImGui::GetContentRegionAvail().x < w) ImGui::NewLine();
  };
  auto field_w = [](float input_w, const char* label) {
    return input_w + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
  };
  int nproc = model_.train_nproc();
  const float nproc_w = ImGui::CalcTextSize("000").x + ImGui::GetFrameHeight() * 2.f + 8.f;
  same_line_if_room(field_w(nproc_w, "processes"));
  ImGui::SetNextItemWidth(nproc_w);
  if (ImGui::InputInt("processes", &nproc)) model_.set_train_nproc(nproc);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Data-parallel ranks on this machine (train --nproc N): each trains on a share of every batch");
  int probe = model_.probe_example();
  const float probe_w = ImGui::CalcTextSize("00000").x + ImGui::GetFrameHeight() * 2.f + 8.f;
  same_line_if_room(field_w(probe_w, "probe example"));
  ImGui::SetNextItemWidth(probe_w);
  if (ImGui::InputInt("probe example", &probe)) model_.set_probe_example(probe);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("The test example the run's probe recordings step (the maps this dashboard replays): "
                      "--set train.record_example=N; -1 = the config's own (example 0 unless it sets one). "
                      "train checks it against the task's test split");
  same_line_if_room(ImGui::CalcTextSize("Start").x + 2.f * ImGui::GetStyle().FramePadding.x);
  if (ImGui::SmallButton("Start")) {
    std::string err;
    if (!model_.start_training(model_.train_config(), train_out_, &err)) ctx.requests.errors.push_back("Training: " + err);
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("Runs `mnemoscope train --config CONFIG --out SESSION [--nproc N]` and follows it here");
  if (st == TrainingProcess::State::kExited) {
    ImGui::SameLine();
    if (ImGui::SmallButton("Continue")) {
      std::string err;
      if (!model_.start_training("", train.out_dir(), &err)) ctx.requests.errors.push_back("Training: " + err);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Resume the last run from its latest checkpoint (train --resume)");
  }
  ImGui::EndDisabled();
  if (model_.editing() && !going && !ctx.preview) {
    ImGui::InputTextMultiline("##config-text", &model_.edit_text(),
                              ImVec2(-1.f, ImGui::GetTextLineHeight() * std::min(16.f, std::max(6.f, ImGui::GetContentRegionAvail().y / ImGui::GetTextLineHeight() * 0.4f))));
    ImGui::SetNextItemWidth(std::max(160.f, ImGui::GetContentRegionAvail().x * 0.5f));
    ImGui::InputText("save as", &model_.edit_save_as());
    ImGui::SameLine();
    if (ImGui::SmallButton("Save")) model_.save_config(model_.edit_text(), model_.edit_save_as(), &model_.edit_error());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Checks every field, then writes the file (atomically) and uses it for Start");
    ImGui::SameLine();
    if (ImGui::SmallButton("Cancel")) model_.stop_editing();
    if (!model_.edit_error().empty()) ImGui::TextColored(ImVec4(0.9f, 0.2f, 0.2f, 1.f), "%s", model_.edit_error().c_str());
  }
  if (going) {
    if (st == TrainingProcess::State::kRunning ? ImGui::SmallButton("Pause") : ImGui::SmallButton("Resume"))
      st == TrainingProcess::State::kRunning ? train.pause() : train.resume();
    ImGui::SameLine();
    if (ImGui::SmallButton("Checkpoint now")) train.checkpoint_now();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Save a checkpoint after the current step");
    ImGui::SameLine();
    if (ImGui::SmallButton("Stop")) train.stop();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Stop after the current step and save (continue later with Continue)");
    ImGui::SameLine();
  }
  if (st != TrainingProcess::State::kIdle) {
    const char* what = st == TrainingProcess::State::kRunning ? "running"
                       : st == TrainingProcess::State::kPaused ? "paused"
                                                                : nullptr;
    std::string status = what ? std::string(what) : "exited with code " + std::to_string(train.exit_code());
    if (!what) {
      const int c = train.exit_code();
      status += c == 0 ? " (done)" : c == 130 ? " (stopped, saved)" : c == 1 ? " (stopped: see the log)" : c == 2 ? " (bad input)" : "";
    }
    ImGui::TextDisabled("%s: %s", status.c_str(), train.last_line().c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("log: %s", train.log_path().c_str());
  }
}

void DashboardPanel::draw(PanelContext& ctx) {
  if (!ctx.preview && ImGui::GetTime() >= next_poll_) {
    next_poll_ = ImGui::GetTime() + 0.5;
    model_.poll();
  }
  draw_training(ctx);
  draw_header(ctx);
  draw_recordings(ctx);
  std::vector<std::string> names;
  for (const auto& n : RunLog::curve_names())
    if (model_.main().charts.count(n) || model_.other().charts.count(n)) names.push_back(n);
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
  // Each gap of the main session's log, from the step before it to the step after it.
  std::vector<ui::CurveBand> bands;
  if (const RunLog* log = model_.run_log()) {
    for (const auto& g : log->gaps) {
      if (g.step_before < 0 && g.step_after < 0) continue;
      const double a = static_cast<double>(g.step_before >= 0 ? g.step_before : g.step_after);
      const double b = static_cast<double>(g.step_after >= 0 ? g.step_after : std::max(g.step_before, log->last_step()));
      bands.push_back({a, b, describe_gap(g)});
    }
  }
  // Curriculum changes of the followed session: a dashed line on every chart but "segments".
  std::vector<ui::CurveMarker> marks;
  if (const RunLog* log = model_.run_log())
    for (const auto& m : log->curriculum_marks())
      marks.push_back({static_cast<double>(m.step), curriculum_mark_label(m),
                       curriculum_mark_label(m) + (m.reason.empty() ? "" : " (" + m.reason + ")")});
  ImGui::BeginChild("##charts", ImVec2(0, 0), false);
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<ui::CurveSeries> series;
    int color = 0;
    for (const DashboardModel::Source* s : {&model_.main(), &model_.other()}) {
      auto it = s->charts.find(names[i]);
      if (it == s->charts.end()) continue;
      for (size_t k = 0; k < it->second.series.size(); ++k) {
        ui::CurveSeries cs;
        cs.data = &it->second.series[k];
        const bool other = s == &model_.other();
        cs.name = it->second.names[k] + (other ? " (B)" : "");
        // One colour per curve in every chart; the compared session's curve dashed in its colour.
        cs.color = ui::im_color(palette::series(curve_color(it->second.names[k], other ? k : color++)));
        cs.dashed = other;
        series.push_back(std::move(cs));
      }
    }
    auto& view = views_[names[i]];
    if (names[i] == "perplexity") view.log_y = true;
    if (i % static_cast<size_t>(cols) != 0) ImGui::SameLine();
    ui::draw_curves(names[i].c_str(), run_curve_info(names[i]).short_title, series, ImVec2(w, h), &view,
                    names[i] == "segments" ? std::vector<ui::CurveMarker>{} : marks, &bands);
  }
  ImGui::EndChild();
}

}  // namespace mnemo::app
