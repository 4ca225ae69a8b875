#include "app/gui/panels/widgets/fonts.h"

#include "viz/figure.h"

#include <sys/stat.h>

#include <cmath>

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

// The merged-in code points' ranges: the atlas reads them when it is built, after load_fonts.
std::vector<ImWchar>& extra_ranges() {
  static std::vector<ImWchar> r;
  return r;
}

}  // namespace

std::string fallback_font_path() {
  for (const char* p : {"/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
                        "/usr/share/fonts/truetype/droid/DroidSansFallback.ttf"})
    if (file_exists(p)) return p;
  return "";
}

UiFonts load_fonts(float size_px, float scale, const std::vector<char32_t>& extra) {
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
  const std::string fallback = fallback_font_path();
  f.fallback = !fallback.empty();
  std::vector<ImWchar>& ranges = extra_ranges();
  ranges.clear();
  if (f.fallback && !extra.empty()) {
    ImFontGlyphRangesBuilder b;
    for (char32_t cp : extra)
      if (cp > 0 && cp <= IM_UNICODE_CODEPOINT_MAX) b.AddChar(static_cast<ImWchar>(cp));
    ImVector<ImWchar> built;
    b.BuildRanges(&built);
    ranges.assign(built.begin(), built.end());
  }
  // The fallback's glyphs merged into a font just added (one fallback per font).
  auto merge_fallback = [&]() {
    if (ranges.size() < 2) return;
    ImFontConfig m;
    m.MergeMode = true;
    m.OversampleH = 1;
    m.OversampleV = 1;
    io.Fonts->AddFontFromFileTTF(fallback.c_str(), px, &m, ranges.data());
  };
  if (file_exists(regular)) {
    f.ui = io.Fonts->AddFontFromFileTTF(regular.c_str(), px, &cfg, kRanges);
    if (f.ui) merge_fallback();
  }
  if (f.ui && file_exists(mono)) {
    f.mono = io.Fonts->AddFontFromFileTTF(mono.c_str(), px, &cfg, kRanges);
    if (f.mono) merge_fallback();
    static const ImWchar kAscii[] = {0x0020, 0x007E, 0};
    ImFontConfig sc;
    sc.OversampleH = 2;
    sc.OversampleV = 2;
    f.small_mono = io.Fonts->AddFontFromFileTTF(mono.c_str(), std::round(px * 0.62f), &sc, kAscii);
  }
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
