// Controls: stepping (previous / next / play with speed / jump / reset), the model config
// with Apply, checkpoint and document loading, and the progress of a long jump (cancellable).
#include "core/models/capabilities.h"
#include "app/figures/figures.h"
#include "app/gui/panels/panels.h"
#include "app/gui/model/model_fields.h"

#include "app/gui/panels/widgets/widgets.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mnemo::app {

void ControlsPanel::sync_fields(const ViewSource& info) {
  synced_info_ = info.id;
  edit_ = info.cfg;
  seed_ = info.seed;
  checkpoint_ = info.checkpoint;
  other_fields_ = other_model_fields(info.cfg);
}

// Transport buttons, the speed, how the document is cut and the jump slider.
void ControlsPanel::draw_transport(PanelContext& ctx, int64_t n) {
  const PublishedView& s = ctx.view;
  ImGui::BeginDisabled(s.info == nullptr || ctx.preview);
  auto tip = [](const char* text) {
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", text);
  };
  if (ImGui::Button("|<")) ctx.control.jump(0);
  tip("first segment (Home)");
  ImGui::SameLine();
  if (ImGui::Button("< Prev")) ctx.control.step(-1);
  tip("previous segment (Left arrow)");
  ImGui::SameLine();
  if (ImGui::Button(ctx.transport.playing ? "Pause" : "Play", ImVec2(ImGui::CalcTextSize("Pause").x + 16.f, 0)))
    ctx.transport.playing = !ctx.transport.playing;
  tip("step forward continuously (Space)");
  ImGui::SameLine();
  if (ImGui::Button("Next >")) ctx.control.step(+1);
  tip("next segment (Right arrow)");
  ImGui::SameLine();
  if (ImGui::Button(">|") && n > 0) ctx.control.jump(n - 1);
  tip("last segment (End); long documents show progress");
  ImGui::SameLine();
  if (ImGui::Button("Reset")) {
    ctx.transport.playing = false;
    ctx.control.reset();
  }
  tip("forget every step: back to before segment 0");
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("segments/s").x - 8.f);
  ImGui::SliderFloat("segments/s", &ctx.transport.speed, 0.5f, 60.f, "%.1f", ImGuiSliderFlags_Logarithmic);
  if (s.info && s.info->stepping.segment_len > 0) draw_stepping(s.info->stepping);
  // Jump slider: follows the position; a release jumps.
  if (!slider_active_) slider_ = static_cast<int>(std::max<int64_t>(0, s.position));
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("segments/s").x - 8.f);
  ImGui::SliderInt("segment", &slider_, 0, static_cast<int>(std::max<int64_t>(0, n - 1)), s.position < 0 ? "(none yet)" : "%d");
  slider_active_ = ImGui::IsItemActive();
  if (ImGui::IsItemDeactivatedAfterEdit()) ctx.control.jump(slider_);
  ImGui::EndDisabled();
}

// How the document is cut, against how the model was trained (core/models/stepping.h).
void ControlsPanel::draw_stepping(const Stepping& st) {
  const std::string line = "Stepping " + st.describe();
  if (st.as_trained()) ImGui::TextDisabled("%s", line.c_str());
  else ImGui::TextColored(ImVec4(0.95f, 0.65f, 0.2f, 1.f), "%s (!)", line.c_str());
  if (!ImGui::IsItemHovered()) return;
  std::string tip = "The document is cut into segments of " + std::to_string(st.segment_len) + " tokens; the model takes at most " +
                    std::to_string(st.model_len) + " (its segment_len).";
  if (st.trained_len > 0)
    tip += st.as_trained() ? "\nIts checkpoint was trained on segments of this length."
                           : "\n" + st.warning() + ".\nReopen it without --segment-len to step it as trained.";
  else
    tip += "\nNo training task is recorded for these weights.";
  ImGui::SetTooltip("%s", tip.c_str());
}

// The progress of the running command, with Cancel.
void ControlsPanel::draw_progress(PanelContext& ctx) {
  if (!ctx.control.busy() || ctx.preview) return;
  const float p = ctx.control.progress();
  ImGui::ProgressBar(p >= 0.f ? p : 0.f, ImVec2(ImGui::GetContentRegionAvail().x - 80.f, 0), p >= 0.f ? nullptr : "working...");
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(72.f, 0))) {
    ctx.transport.playing = false;
    ctx.control.cancel();
  }
}

// The status lines of the shown step, composed when the step changes.
void ControlsPanel::compose_status(const PublishedView& s) {
  if (status_.step == s.step && status_.info == s.info) return;
  status_ = Status{};
  status_.step = s.step;
  status_.info = s.info;
  const StepData& st = *s.step;
  char buf[160];
  std::snprintf(buf, sizeof buf, "  (tokens %lld..%lld)", static_cast<long long>(st.first_token),
                static_cast<long long>(st.first_token + st.length - 1));
  status_.position = position_text(st.segment, s.info->num_segments) + buf;
  const int64_t lo = st.token_losses.first, hi = lo + static_cast<int64_t>(st.token_losses.values.size()) - 1;
  if (!std::isfinite(st.loss)) {
    if (std::isnan(st.loss) && !st.non_finite)
      status_.none = !st.mtn.qa_answer_prob.empty()
                         ? "loss: none (stepped with the answer-tagging head it was trained with on the qa task: the "
                           "MTN memory panel shows the question's answers)"
                     : st.loss_next_segment ? "loss: none (last segment: no next segment to predict)"
                                            : "loss: none (no token to predict here)";
    return;
  }
  // Both units: nats/token, and bits/byte as eval counts them (every token is one byte).
  if (st.loss_next_segment) std::snprintf(buf, sizeof buf, "loss(next segment %lld):", static_cast<long long>(st.segment + 1));
  else if (!st.token_losses.empty())
    std::snprintf(buf, sizeof buf, "loss(next token), tokens %lld..%lld:", static_cast<long long>(lo), static_cast<long long>(hi));
  else std::snprintf(buf, sizeof buf, "loss of this step:");
  status_.loss_label = buf;
  status_.loss_value = "  " + loss_units_text(st.loss);
  std::snprintf(buf, sizeof buf, "%.6f nats = %.6f bits a token", st.loss, st.loss / std::log(2.0));
  status_.loss_tip = std::string(buf) + " (bits = nats / ln 2; each token is one byte, so bits/token is eval's bits/byte)";
  // A loss that does not measure the model says so (an untrained output head, worse than uniform).
  status_.warning = loss_warning(st.loss, s.info->trained_task, s.info->random_weights);
  // A synthetic task's episode: the loss above averages every predicted token, random
  // symbols too; what the task scores (and the memory is for) is said beside it.
  if (!s.info->scored_tokens.empty() && !st.token_losses.empty()) {
    const ScoredLoss sl = scored_loss(st.token_losses, s.info->scored_tokens);
    status_.scored_any = sl.tokens > 0;
    if (sl.tokens > 0) {
      std::snprintf(buf, sizeof buf, "scored by its task: %.4f nats/token (%lld of %zu tokens)", sl.mean,
                    static_cast<long long>(sl.tokens), st.token_losses.values.size());
      status_.scored = buf;
    } else {
      status_.scored = "its task scores none of these tokens";
    }
  }
}

// Where the step is, its loss (or why there is none) and what the loss does not measure.
void ControlsPanel::draw_status(const PublishedView& s, int64_t n) {
  if (!s.info) {
    ImGui::TextDisabled("No document open (Ctrl+O).");
    return;
  }
  if (!s.step) {
    // Wrapped: a narrow Controls column (1280x720) cut the key names off.
    ui::text_wrapped_at_spaces(std::to_string(n) + " segments; none stepped yet. Press Right or Play.");
    return;
  }
  compose_status(s);
  ImGui::TextUnformatted(status_.position.c_str());
  // The numbers on a line of their own, so a narrow panel never breaks one.
  if (!status_.loss_label.empty()) {
    ImGui::TextUnformatted(status_.loss_label.c_str());
    ImGui::TextUnformatted(status_.loss_value.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", status_.loss_tip.c_str());
  } else if (!s.step->mtn.qa_answer_prob.empty() && !status_.none.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ui::text_wrapped_at_spaces(status_.none);
    ImGui::PopStyleColor();
  } else if (!status_.none.empty()) {
    ImGui::TextDisabled("%s", status_.none.c_str());
  }
  if (!status_.warning.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.f, 0.62f, 0.25f, 1.f));
    ImGui::TextWrapped("%s", status_.warning.c_str());
    ImGui::PopStyleColor();
  }
  if (!status_.scored.empty()) {
    if (status_.scored_any) ImGui::TextUnformatted(status_.scored.c_str());
    else ImGui::TextDisabled("%s", status_.scored.c_str());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("The loss above is the mean over every token this step predicts. The checkpoint's training "
                        "task scores only some positions of its episodes (a copy's recalled symbols, not the random "
                        "source or distractors, which no model can predict), and this document is stepped as one of "
                        "them: this line is the mean over those. Tint: loss shows each token's loss.");
  }
  if (s.step->non_finite)
    ImGui::TextColored(ImVec4(1.f, 0.3f, 0.8f, 1.f), "NaN/Inf in '%s' at segment %lld", s.step->non_finite_key.c_str(),
                       static_cast<long long>(s.step->segment));
}

// The open document's path and Open...
void ControlsPanel::draw_document_row(PanelContext& ctx) {
  const PublishedView& s = ctx.view;
  if (s.info) {
    const std::string path = ui::elide_left(s.info->doc->path, ImGui::GetContentRegionAvail().x - 90.f);
    ImGui::TextUnformatted(path.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", s.info->doc->path.c_str());
    ImGui::SameLine();
  }
  ui::align_right(ImGui::CalcTextSize("Open...").x + 2.f * ImGui::GetStyle().FramePadding.x);
  ImGui::BeginDisabled(ctx.preview);
  if (ImGui::Button("Open...")) ctx.requests.open_dialog = true;
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("open another document (Ctrl+O, or drop a file on the window)");
}

// The fields Apply can change (those the shown model does not use greyed out), then the rest
// of its config. Which fields, their labels, ranges and tooltips: model_field_controls(), read
// from ModelConfig::fields() (app/gui/model/model_fields.h), so a help or range changed in the
// table shows here.
void ControlsPanel::draw_model_fields(const PublishedView& s) {
  const bool have = s.info != nullptr;
  // Fields shrink with the panel so their labels stay readable (negative width = leave room).
  const float label_room = ImGui::CalcTextSize("segment len").x + ImGui::GetStyle().ItemInnerSpacing.x + 4.f;
  auto width = [&] { return std::max(1.f, std::min(ImGui::GetFontSize() * 7.f, ImGui::GetContentRegionAvail().x - label_room)); };
  const std::string model_kind = have ? edit_.model : std::string("memformer");  // no model yet: the default's fields
  auto tip = [](const std::string& text) {
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", text.c_str());
  };
  auto seed = [&] {
    ImGui::TableNextColumn();
    ImGui::SetNextItemWidth(width());
    ImGui::InputScalar("seed", ImGuiDataType_U64, &seed_);
    tip("seed of the random initialisation");
  };
  if (ImGui::BeginTable("##model", 2, ImGuiTableFlags_SizingStretchSame)) {
    bool seeded = false;
    for (const ModelFieldControl& c : model_field_controls(model_kind)) {
      const ConfigField<ModelConfig>& row = *c.row;
      if (row.kind == FieldKind::kBool && !seeded) {  // the seed after the numbers, before the switches
        seed();
        seeded = true;
      }
      ImGui::TableNextColumn();
      ImGui::BeginDisabled(!c.used);
      if (row.kind != FieldKind::kBool) ImGui::SetNextItemWidth(width());
      switch (row.kind) {
        case FieldKind::kInt: ImGui::InputScalar(c.label.c_str(), ImGuiDataType_S64, &(edit_.*row.int_member)); break;
        case FieldKind::kReal: ImGui::InputDouble(c.label.c_str(), &(edit_.*row.real_member), 0.0, 0.0, "%g"); break;
        case FieldKind::kBool: ImGui::Checkbox(c.label.c_str(), &(edit_.*row.bool_member)); break;
        default: ImGui::TextDisabled("%s", c.label.c_str()); break;  // no control for this kind of row
      }
      ImGui::EndDisabled();
      tip(c.tip);
    }
    if (!seeded) seed();
    ImGui::EndTable();
  }
  if (!have) return;
  // The fields above are the ones Apply can change; the rest of the shown model's config,
  // so that a model without a memory, a gated read or a hashed Linear is never taken for
  // the default.
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ui::text_wrapped_at_spaces(other_fields_);
  ImGui::PopStyleColor();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("the rest of this model's config (from its checkpoint or config file); Apply keeps these as they are");
}

// Apply (the fields, checked here too by the table's validate(), so a bad value gets its popup
// without a round trip) and Revert.
void ControlsPanel::draw_apply(PanelContext& ctx) {
  const PublishedView& s = ctx.view;
  const bool have = s.info != nullptr;
  ImGui::BeginDisabled(!have || ctx.preview);
  if (ImGui::Button("Apply")) {
    const ModelConfig& cfg = edit_;
    std::string problem;
    try {
      cfg.validate();  // the table's ranges and messages ("config field 'slots' = 0 is out of range 1..65536")
    } catch (const std::exception& e) {
      problem = e.what();
    }
    if (!problem.empty()) {
      ctx.requests.errors.push_back("Invalid model config: " + problem + ". The model was not changed.");
    } else {
      ctx.transport.playing = false;
      ctx.control.apply_model(cfg, seed_, "");
    }
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("rebuild the model with these values and random weights; stepping starts over");
  ImGui::SameLine();
  if (ImGui::Button("Revert") && have) sync_fields(*s.info);
  ImGui::EndDisabled();
}

// The checkpoint path and Load checkpoint.
void ControlsPanel::draw_checkpoint(PanelContext& ctx) {
  const PublishedView& s = ctx.view;
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("Load checkpoint").x - 24.f);
  ImGui::InputTextWithHint("##ckpt", "checkpoint.safetensors", &checkpoint_);
  ImGui::SameLine();
  ImGui::BeginDisabled(!s.info || ctx.preview);
  if (ImGui::Button("Load checkpoint")) {
    if (checkpoint_.empty()) {
      ctx.requests.errors.push_back("Checkpoint: no file given. Type the path of a .safetensors file (from export-weights or training).");
    } else {
      ctx.transport.playing = false;
      ctx.control.apply_model(s.info->cfg, seed_, checkpoint_);
    }
  }
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("load weights; a checkpoint that names its model config brings that config");
}

// The model and where its weights came from, wrapped at spaces; a path wider than the column keeps
// its end (the file name) after a leading "…". Hovering shows the whole note.
static void draw_model_note(const std::string& note) {
  const float width = std::max(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize());
  bool shortened = false;
  ImGui::BeginGroup();
  for (const auto& l : ui::wrap_at_spaces(note, width, [](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x; })) {
    const std::string shown = ui::elide_left(l, width);
    shortened = shortened || shown != l;
    ImGui::TextDisabled("%s", shown.c_str());
  }
  ImGui::EndGroup();
  if (shortened && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", note.c_str());
}

void ControlsPanel::draw(PanelContext& ctx) {
  const PublishedView& s = ctx.view;
  const int64_t n = s.info ? s.info->num_segments : 0;
  if (s.info && s.info->id != synced_info_) sync_fields(*s.info);
  draw_transport(ctx, n);
  draw_progress(ctx);
  draw_status(s, n);
  if (s.info) draw_model_note(s.model_note);
  ImGui::Separator();
  draw_document_row(ctx);
  if (ImGui::CollapsingHeader("Model", ImGuiTreeNodeFlags_DefaultOpen)) {
    draw_model_fields(s);
    draw_apply(ctx);
    draw_checkpoint(ctx);
  }
}

}  // namespace mnemo::app
