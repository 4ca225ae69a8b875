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

namespace mnemo::app {

void ControlsPanel::sync_fields(const ViewSource& info) {
  synced_info_ = info.id;
  slots_ = info.cfg.slots;
  segment_len_ = info.cfg.segment_len;
  heads_ = info.cfg.heads;
  layers_ = info.cfg.layers;
  dec_layers_ = info.cfg.dec_layers;
  dim_ = info.cfg.dim;
  temperature_ = static_cast<float>(info.cfg.temperature);
  forgetting_ = info.cfg.forgetting;
  seed_ = info.seed;
  checkpoint_ = info.checkpoint;
  other_fields_ = other_model_fields(info.cfg);
}

void ControlsPanel::draw(PanelContext& ctx) {
  const PublishedView& s = ctx.session;
  const bool have = s.info != nullptr;
  const int64_t n = have ? s.info->num_segments : 0;
  if (have && s.info->id != synced_info_) sync_fields(*s.info);
  const bool busy = ctx.control.busy();

  // --- Transport ---
  ImGui::BeginDisabled(!have || ctx.preview);
  if (ImGui::Button("|<")) ctx.control.jump(0);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("first segment (Home)");
  ImGui::SameLine();
  if (ImGui::Button("< Prev")) ctx.control.step(-1);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("previous segment (Left arrow)");
  ImGui::SameLine();
  if (ImGui::Button(ctx.transport.playing ? "Pause" : "Play", ImVec2(ImGui::CalcTextSize("Pause").x + 16.f, 0)))
    ctx.transport.playing = !ctx.transport.playing;
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("step forward continuously (Space)");
  ImGui::SameLine();
  if (ImGui::Button("Next >")) ctx.control.step(+1);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("next segment (Right arrow)");
  ImGui::SameLine();
  if (ImGui::Button(">|") && n > 0) ctx.control.jump(n - 1);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("last segment (End); long documents show progress");
  ImGui::SameLine();
  if (ImGui::Button("Reset")) {
    ctx.transport.playing = false;
    ctx.control.reset();
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("forget every step: back to before segment 0");
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("segments/s").x - 8.f);
  ImGui::SliderFloat("segments/s", &ctx.transport.speed, 0.5f, 60.f, "%.1f", ImGuiSliderFlags_Logarithmic);
  // How the document is cut, against how the model was trained (core/models/stepping.h).
  if (have && s.info->stepping.segment_len > 0) {
    const Stepping& st = s.info->stepping;
    const std::string line = "Stepping " + st.describe();
    if (st.as_trained()) ImGui::TextDisabled("%s", line.c_str());
    else ImGui::TextColored(ImVec4(0.95f, 0.65f, 0.2f, 1.f), "%s (!)", line.c_str());
    if (ImGui::IsItemHovered()) {
      std::string tip = "The document is cut into segments of " + std::to_string(st.segment_len) + " tokens; the model takes at most " +
                        std::to_string(st.model_len) + " (its segment_len).";
      if (st.trained_len > 0)
        tip += st.as_trained() ? "\nIts checkpoint was trained on segments of this length."
                               : "\n" + st.warning() + ".\nReopen it without --segment-len to step it as trained.";
      else
        tip += "\nNo training task is recorded for these weights.";
      ImGui::SetTooltip("%s", tip.c_str());
    }
  }

  // Jump slider: follows the position; a release jumps.
  if (!slider_active_) slider_ = static_cast<int>(std::max<int64_t>(0, s.position));
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("segments/s").x - 8.f);
  ImGui::SliderInt("segment", &slider_, 0, static_cast<int>(std::max<int64_t>(0, n - 1)), s.position < 0 ? "(none yet)" : "%d");
  slider_active_ = ImGui::IsItemActive();
  if (ImGui::IsItemDeactivatedAfterEdit()) ctx.control.jump(slider_);
  ImGui::EndDisabled();

  // --- Progress of the running command ---
  if (busy && !ctx.preview) {
    const float p = ctx.control.progress();
    ImGui::ProgressBar(p >= 0.f ? p : 0.f, ImVec2(ImGui::GetContentRegionAvail().x - 80.f, 0), p >= 0.f ? nullptr : "working...");
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(72.f, 0))) {
      ctx.transport.playing = false;
      ctx.control.cancel();
    }
  }

  // --- Status ---
  if (!have) {
    ImGui::TextDisabled("No document open (Ctrl+O).");
  } else if (!s.step) {
    ImGui::Text("%lld segments; none stepped yet. Press Right or Play.", static_cast<long long>(n));
  } else {
    const StepData& st = *s.step;
    ImGui::Text("%s  (tokens %lld..%lld)", position_text(st.segment, n).c_str(),
                static_cast<long long>(st.first_token), static_cast<long long>(st.first_token + st.length - 1));
    const int64_t lo = st.token_losses.first, hi = lo + static_cast<int64_t>(st.token_losses.values.size()) - 1;
    // Both units: nats/token, and bits/byte as eval counts them (every token is one byte).
    const std::string units = std::isfinite(st.loss) ? loss_units_text(st.loss) : std::string();
    // The numbers on a line of their own, so a narrow panel never breaks one.
    if (std::isfinite(st.loss) && st.loss_next_segment)
      ImGui::Text("loss(next segment %lld):", static_cast<long long>(st.segment + 1));
    else if (std::isfinite(st.loss) && !st.token_losses.empty())
      ImGui::Text("loss(next token), tokens %lld..%lld:", static_cast<long long>(lo), static_cast<long long>(hi));
    else if (std::isfinite(st.loss))
      ImGui::Text("loss of this step:");
    if (std::isfinite(st.loss)) ImGui::Text("  %s", units.c_str());
    else if (std::isnan(st.loss) && !st.non_finite)
      ImGui::TextDisabled(st.loss_next_segment ? "loss: none (last segment: no next segment to predict)"
                                               : "loss: none (no token to predict here)");
    // A finite loss was the last item drawn: its tooltip gives it in bits too.
    if (std::isfinite(st.loss) && ImGui::IsItemHovered())
      ImGui::SetTooltip("%.6f nats = %.6f bits a token (bits = nats / ln 2; each token is one byte, so bits/token is "
                        "eval's bits/byte)",
                        st.loss, st.loss / std::log(2.0));
    // A loss that does not measure the model says so (an untrained output head, worse than uniform).
    if (std::isfinite(st.loss)) {
      const std::string warn = loss_warning(st.loss, s.info->trained_task, s.info->random_weights);
      if (!warn.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.f, 0.62f, 0.25f, 1.f));
        ImGui::TextWrapped("%s", warn.c_str());
        ImGui::PopStyleColor();
      }
    }
    // A synthetic task's episode: the loss above averages every predicted token, random
    // symbols too; what the task scores (and the memory is for) is said beside it.
    if (std::isfinite(st.loss) && !s.info->scored_tokens.empty() && !st.token_losses.empty()) {
      const ScoredLoss sl = scored_loss(st.token_losses, s.info->scored_tokens);
      if (sl.tokens > 0)
        ImGui::Text("scored by its task: %.4f nats/token (%lld of %zu tokens)", sl.mean, static_cast<long long>(sl.tokens),
                    st.token_losses.values.size());
      else
        ImGui::TextDisabled("its task scores none of these tokens");
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("The loss above is the mean over every token this step predicts. The checkpoint's training "
                          "task scores only some positions of its episodes (a copy's recalled symbols, not the random "
                          "source or distractors, which no model can predict), and this document is stepped as one of "
                          "them: this line is the mean over those. Tint: loss shows each token's loss.");
    }
    if (st.non_finite)
      ImGui::TextColored(ImVec4(1.f, 0.3f, 0.8f, 1.f), "NaN/Inf in '%s' at segment %lld", st.non_finite_key.c_str(),
                         static_cast<long long>(st.segment));
  }
  if (have) ImGui::TextDisabled("%s", s.model_note.c_str());

  // --- Document ---
  ImGui::Separator();
  if (have) {
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

  // --- Model ---
  if (ImGui::CollapsingHeader("Model", ImGuiTreeNodeFlags_DefaultOpen)) {
    // Fields shrink with the panel so their labels stay readable (negative width = leave room).
    const float label_room = ImGui::CalcTextSize("segment len").x + ImGui::GetStyle().ItemInnerSpacing.x + 4.f;
    auto width = [&] { return std::max(1.f, std::min(ImGui::GetFontSize() * 7.f, ImGui::GetContentRegionAvail().x - label_room)); };
    // Fields the model does not use are greyed out (they keep their value for Apply).
    const std::string model = have ? s.info->cfg.model : std::string("memformer");
    const ModelCapabilities& caps = capabilities_of(model);
    const bool memformer = caps.panels == PanelFamily::kMemformer;
    const bool mtn_family = caps.mtn_family;
    const std::string unused = "not used by " + model + (mtn_family ? " (its layers are n1_layers / n2_layers in the config)" : "");
    auto field = [&](const char* label, int64_t* v, const char* tip, bool used = true) {
      ImGui::BeginDisabled(!used);
      ImGui::SetNextItemWidth(width());
      ImGui::InputScalar(label, ImGuiDataType_S64, v);
      ImGui::EndDisabled();
      if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", used ? tip : unused.c_str());
    };
    if (ImGui::BeginTable("##model", 2, ImGuiTableFlags_SizingStretchSame)) {
      ImGui::TableNextColumn();
      ModelConfig kind;
      kind.model = model;
      field("slots", &slots_,
            memformer ? "memory slots k (1..65536)"
                      : "memory size (1..65536): RMT memory tokens, Transformer-XL cache length, MTN kept entries",
            kind.uses_slots());
      ImGui::TableNextColumn();
      field("segment len", &segment_len_, "tokens per segment L (1..65536)");
      ImGui::TableNextColumn();
      field("heads", &heads_, "attention heads (must divide dim)");
      ImGui::TableNextColumn();
      field("dim", &dim_, "model width d");
      ImGui::TableNextColumn();
      field("layers", &layers_, memformer ? "encoder layers" : "layers", !mtn_family);
      // Memformer's own fields (decoder layers, writer temperature, forgetting) only for a
      // Memformer: another family never reads them, and showing them invites edits that do nothing.
      if (memformer) {
        ImGui::TableNextColumn();
        field("dec layers", &dec_layers_, "decoder layers");
        ImGui::TableNextColumn();
        ImGui::SetNextItemWidth(width());
        ImGui::InputFloat("temperature", &temperature_, 0.f, 0.f, "%.3f");
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("writer temperature tau (> 0); small = sharper writer attention");
      }
      ImGui::TableNextColumn();
      ImGui::SetNextItemWidth(width());
      ImGui::InputScalar("seed", ImGuiDataType_U64, &seed_);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("seed of the random initialisation");
      if (memformer) {
        ImGui::TableNextColumn();
        ImGui::Checkbox("forgetting", &forgetting_);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("biased memory normalisation with v_bias (off = ablation)");
      }
      ImGui::EndTable();
    }
    if (have) {
      // The fields above are the ones Apply can change; the rest of the shown model's config,
      // so that a model without a memory, a gated read or a hashed Linear is never taken for
      // the default.
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
      ui::text_wrapped_at_spaces(other_fields_);
      ImGui::PopStyleColor();
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("the rest of this model's config (from its checkpoint or config file); Apply keeps these as they are");
    }
    ImGui::BeginDisabled(!have || ctx.preview);
    if (ImGui::Button("Apply")) {
      ModelConfig cfg = s.info->cfg;
      cfg.slots = slots_;
      cfg.segment_len = segment_len_;
      cfg.heads = heads_;
      cfg.layers = layers_;
      cfg.dec_layers = dec_layers_;
      cfg.dim = dim_;
      cfg.temperature = temperature_;
      cfg.forgetting = forgetting_;
      // Checked here too, so a bad value gets its popup without a round trip.
      std::string problem;
      if (cfg.heads > 0 && cfg.dim % cfg.heads != 0)
        problem = "heads: dim " + std::to_string(cfg.dim) + " must be divisible by heads " + std::to_string(cfg.heads);
      else if (!(temperature_ > 0.f) || !std::isfinite(temperature_))
        problem = "temperature " + std::to_string(temperature_) + " must be > 0";
      if (problem.empty()) {
        try {
          cfg.validate();
        } catch (const std::exception& e) {
          problem = e.what();
        }
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

    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("Load checkpoint").x - 24.f);
    ImGui::InputTextWithHint("##ckpt", "checkpoint.safetensors", &checkpoint_);
    ImGui::SameLine();
    ImGui::BeginDisabled(!have || ctx.preview);
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
}

}  // namespace mnemo::app
