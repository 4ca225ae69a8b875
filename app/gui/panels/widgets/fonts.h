// Fonts for the ImGui atlas: DejaVu Sans for the interface and DejaVu Sans Mono for the
// document (every token one cell wide), with the glyphs token labels use (␣ ↵ → · …), and the
// glyphs a document needs beyond them from a fallback font (CJK).
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

namespace mnemo::app::ui {

struct UiFonts {
  ImFont* ui = nullptr;    // default font (io.FontDefault)
  ImFont* mono = nullptr;  // monospace; equals ui when DejaVu Sans Mono is missing
  bool from_files = false; // false when ImGui's built-in font had to be used
  bool fallback = false;   // the fallback font (fallback_font_path) is installed
  ImFont* small_mono = nullptr;  // DejaVu Sans Mono at 62 % size, ASCII only (null when missing)
};

// Debian's fonts-droid-fallback (DroidSansFallbackFull.ttf: CJK and more), the font the
// glyphs DejaVu lacks come from; "" when it is not installed.
std::string fallback_font_path();

// Adds the fonts to io.Fonts (call before the atlas is built, i.e. before the first frame
// or the renderer's font upload). size_px is the em size at scale 1; scale multiplies it
// (HiDPI content scale). Falls back to ImGui's default font when the files are missing.
// extra: code points beyond the built-in ranges (a document's CJK characters, reported by the
// Document panel) merged in from the fallback font into both fonts, when it is installed.
UiFonts load_fonts(float size_px, float scale, const std::vector<char32_t>& extra = {});

}  // namespace mnemo::app::ui
