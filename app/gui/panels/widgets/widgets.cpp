#include "app/gui/panels/widgets/widgets.h"
#include "app/gui/panels/widgets/heatmap.h"

#include <algorithm>

namespace mnemo::app::ui {

void help_marker(const char* text) {
  ImGui::SameLine();
  // On the next line when the line it follows reached the right edge (a wrapped line of text:
  // the Document's selected token's reads cut it to "(" at the panel's edge).
  if (ImGui::GetContentRegionAvail().x < ImGui::CalcTextSize("(?)").x) ImGui::NewLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 32.f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void inline_bar(float fraction, ImU32 color, float height, const char* overlay) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float w = std::max(1.f, ImGui::GetContentRegionAvail().x);
  const float f = std::min(1.f, std::max(0.f, fraction));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p, ImVec2(p.x + w, p.y + height), IM_COL32(255, 255, 255, 18));
  if (f > 0.f) dl->AddRectFilled(p, ImVec2(p.x + w * f, p.y + height), color);
  if (overlay) {
    const float th = ImGui::GetTextLineHeight();
    dl->AddText(ImVec2(p.x + 4.f, p.y + 0.5f * (height - th)), IM_COL32(255, 255, 255, 255), overlay);
  }
  ImGui::Dummy(ImVec2(w, height));
}

bool button_enabled(const char* label, bool enabled, ImVec2 size) {
  ImGui::BeginDisabled(!enabled);
  const bool pressed = ImGui::Button(label, size);
  ImGui::EndDisabled();
  return pressed && enabled;
}

void align_right(float width) {
  const float avail = ImGui::GetContentRegionAvail().x;
  ImGui::SameLine();
  const float x = ImGui::GetCursorPosX() + ImGui::GetContentRegionAvail().x - width;
  if (avail > width + 8.f && x > ImGui::GetCursorPosX()) ImGui::SetCursorPosX(x);
  else ImGui::NewLine();
}

std::string elide_left(const std::string& s, float max_width) {
  if (ImGui::CalcTextSize(s.c_str()).x <= max_width) return s;
  const std::string ell = "\xE2\x80\xA6";  // …
  size_t start = 0;
  while (start < s.size()) {
    ++start;
    while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;  // whole code points
    const std::string t = ell + s.substr(start);
    if (ImGui::CalcTextSize(t.c_str()).x <= max_width) return t;
  }
  return ell;
}

std::string elide_right(const std::string& s, float max_width) {
  if (ImGui::CalcTextSize(s.c_str()).x <= max_width) return s;
  const std::string ell = "\xE2\x80\xA6";  // …
  size_t end = s.size();
  while (end > 0) {
    --end;
    while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;  // whole code points
    const std::string t = s.substr(0, end) + ell;
    if (ImGui::CalcTextSize(t.c_str()).x <= max_width) return t;
  }
  return ell;
}

bool text_one_line(const std::string& text, ImVec4 colour) {
  const size_t nl = text.find('\n');
  const std::string first = text.substr(0, nl);
  const std::string shown = elide_right(first, std::max(1.f, ImGui::GetContentRegionAvail().x));
  const bool cut = nl != std::string::npos || shown != first;
  ImGui::TextColored(colour, "%s", shown.c_str());
  if (cut && ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36.f);
    ImGui::TextUnformatted(text.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
  return cut;
}

std::vector<std::string> wrap_at_spaces(const std::string& text, float width,
                                        const std::function<float(const std::string&)>& measure) {
  std::vector<std::string> lines;
  std::string line;
  size_t i = 0;
  while (i < text.size()) {
    const size_t j = std::min(text.find(' ', i), text.size());
    if (j > i) {
      const std::string word = text.substr(i, j - i);
      const std::string longer = line.empty() ? word : line + " " + word;
      if (!line.empty() && measure(longer) > width) {
        lines.push_back(line);
        line = word;
      } else {
        line = longer;
      }
    }
    i = j + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

void text_wrapped_at_spaces(const std::string& text) {
  const float width = std::max(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize());
  ImGui::BeginGroup();
  for (const auto& l : wrap_at_spaces(text, width, [](const std::string& s) { return ImGui::CalcTextSize(s.c_str()).x; }))
    ImGui::TextUnformatted(l.c_str());
  ImGui::EndGroup();
}

void colormap_strip(viz::Colormap cmap, float lo, float hi) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float w = ImGui::GetFontSize() * 6.f, h = ImGui::GetFontSize();
  const ColorLut lut(cmap);
  const int steps = 24;
  for (int i = 0; i < steps; ++i) {
    const float x0 = p0.x + w * static_cast<float>(i) / steps, x1 = p0.x + w * static_cast<float>(i + 1) / steps;
    dl->AddRectFilled(ImVec2(x0, p0.y + 2.f), ImVec2(x1, p0.y + h), lut.at(lo + (hi - lo) * (i + 0.5f) / steps));
  }
  ImGui::Dummy(ImVec2(w, h));  // reserves the strip's space as one item
}

}  // namespace mnemo::app::ui
