#include "app/gui/shell/model_picker.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <cstdio>

namespace mnemo::app {

void ModelPicker::open(const std::string& checkpoint, const std::string& document, Controller& control) {
  // The model first (a file with a config brings it; one without keeps the current model's),
  // then its document, if it has one.
  control.apply_model(current_, 0, checkpoint);
  if (!document.empty() && !keep_document_) control.open_document(document);
}

bool ModelPicker::open_selected(Controller& control) {
  if (!path_.empty()) {
    open(path_, "", control);
    return true;
  }
  if (selected_ < 0 || selected_ >= static_cast<int>(zoo_.size())) return false;
  const ZooModel& m = zoo_[static_cast<size_t>(selected_)];
  open(m.path, m.document, control);
  return true;
}

bool ModelPicker::draw(Controller& control, float width, const ModelConfig* current, const std::string& open_doc) {
  bool close = false;
  current_ = current ? *current : ModelConfig{};
  if (zoo_.empty()) {
    ImGui::TextWrapped("No trained models found%s%s. The zoo ships in assets/models/ (docs/zoo/README.md).",
                       dir_.empty() ? "" : " in ", dir_.c_str());
  } else {
    ImGui::Text("Trained models (%s):", dir_.c_str());
    // Summaries wrap within their column (two lines each, about), so the table is taller than
    // one line per model; it scrolls past about 12 lines.
    const float lines = static_cast<float>(zoo_.size() < 6 ? 2 * zoo_.size() : 12);
    const ImGuiTableFlags tf = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY;
    if (ImGui::BeginTable("##zoo", 3, tf, ImVec2(width, ImGui::GetTextLineHeightWithSpacing() * (lines + 1.5f)))) {
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableSetupColumn("model", ImGuiTableColumnFlags_WidthFixed);
      ImGui::TableSetupColumn("kind / task", ImGuiTableColumnFlags_WidthFixed);
      ImGui::TableSetupColumn("summary", ImGuiTableColumnFlags_WidthStretch);
      ImGui::TableHeadersRow();
      for (int i = 0; i < static_cast<int>(zoo_.size()); ++i) {
        const ZooModel& m = zoo_[static_cast<size_t>(i)];
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::PushID(i);
        if (ImGui::Selectable(m.name.c_str(), selected_ == i,
                              ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowDoubleClick)) {
          selected_ = i;
          if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
            open(m.path, m.document, control);
            close = true;
          }
        }
        if (ImGui::IsItemHovered()) {
          const std::string doc_line = m.document.empty() ? "no document of its own: the open document stays"
                                       : keep_document_     ? "keeps the open document (its own: " + m.document + ")"
                                                            : "opens its document " + m.document;
          ImGui::BeginTooltip();
          ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36.f);
          ImGui::TextUnformatted(m.summary.c_str());
          ImGui::Text("%s\ncard: %s\ntrained %lld steps, %.2f MiB\n%s", m.path.c_str(), m.card.c_str(),
                      static_cast<long long>(m.step), static_cast<double>(m.bytes) / (1024.0 * 1024.0), doc_line.c_str());
          ImGui::PopTextWrapPos();
          ImGui::EndTooltip();
        }
        ImGui::PopID();
        ImGui::TableSetColumnIndex(1);
        ImGui::Text("%s / %s", m.model_kind.c_str(), m.task.c_str());
        ImGui::TableSetColumnIndex(2);
        ImGui::TextWrapped("%s", m.summary.c_str());  // whole, wrapped in its column (never clipped)
      }
      ImGui::EndTable();
    }
  }
  if (!open_doc.empty()) {
    const auto slash = open_doc.find_last_of('/');
    const std::string name = slash == std::string::npos ? open_doc : open_doc.substr(slash + 1);
    ImGui::Checkbox(("Keep the open document (" + name + ") instead of the model's episode").c_str(), &keep_document_);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("A zoo model comes with an episode of its task (assets/models/NAME.txt), the one its card "
                        "describes; tick this to step the model through %s instead",
                        open_doc.c_str());
  }
  ImGui::TextDisabled("Or the path of any weights file (a `train` checkpoint, export-weights):");
  ImGui::SetNextItemWidth(width);
  const bool typed = ImGui::InputText("##ckpt", &path_, ImGuiInputTextFlags_EnterReturnsTrue);
  const bool have = !path_.empty() || (selected_ >= 0 && selected_ < static_cast<int>(zoo_.size()));
  ImGui::BeginDisabled(!have);
  if ((ImGui::Button("Open", ImVec2(120, 0)) || typed) && have && !close) close = open_selected(control);
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(120, 0)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) close = true;
  return close;
}

}  // namespace mnemo::app
