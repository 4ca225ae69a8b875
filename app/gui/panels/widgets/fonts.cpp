#include "app/gui/panels/widgets/fonts.h"

#include "viz/figure.h"

#include <sys/stat.h>

#include <string>

namespace mnemo::app::ui {

namespace {

bool file_exists(const std::string& p) {
  struct stat st {};
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Latin (+ Latin-1, Extended-A/B), Greek, Cyrillic, punctuation, arrows, a few symbols.
const ImWchar kRanges[] = {
    0x0020, 0x024F, 0x0370, 0x03FF, 0x0400, 0x04FF, 0x2000, 0x206F, 0x2190, 0x21FF,
    0x2200, 0x22FF, 0x2300, 0x23FF, 0x2400, 0x243F, 0x2500, 0x25FF, 0,
};

}  // namespace

UiFonts load_fonts(float size_px, float scale) {
  ImGuiIO& io = ImGui::GetIO();
  UiFonts f;
  const std::string regular = viz::font_path();
  std::string mono;
  if (auto slash = regular.find_last_of('/'); slash != std::string::npos)
    mono = regular.substr(0, slash + 1) + "DejaVuSansMono.ttf";
  const float px = size_px * (scale > 0.f ? scale : 1.f);
  ImFontConfig cfg;
  cfg.OversampleH = 2;
  cfg.OversampleV = 1;
  if (file_exists(regular)) f.ui = io.Fonts->AddFontFromFileTTF(regular.c_str(), px, &cfg, kRanges);
  if (f.ui && file_exists(mono)) f.mono = io.Fonts->AddFontFromFileTTF(mono.c_str(), px, &cfg, kRanges);
  if (!f.ui) {
    ImFontConfig def;
    def.SizePixels = 13.f * (scale > 0.f ? scale : 1.f);
    f.ui = io.Fonts->AddFontDefault(&def);
  } else {
    f.from_files = true;
  }
  if (!f.mono) f.mono = f.ui;
  io.FontDefault = f.ui;
  return f;
}

}  // namespace mnemo::app::ui
