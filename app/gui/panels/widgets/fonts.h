// Fonts for the ImGui atlas: DejaVu Sans for the interface and DejaVu Sans Mono for the
// document (every token one cell wide), with the glyphs token labels use (␣ ↵ → · …).
#pragma once
#include <imgui.h>

namespace mnemo::app::ui {

struct UiFonts {
  ImFont* ui = nullptr;    // default font (io.FontDefault)
  ImFont* mono = nullptr;  // monospace; equals ui when DejaVu Sans Mono is missing
  bool from_files = false; // false when ImGui's built-in font had to be used
};

// Adds the fonts to io.Fonts (call before the atlas is built, i.e. before the first frame
// or the renderer's font upload). size_px is the em size at scale 1; scale multiplies it
// (HiDPI content scale). Falls back to ImGui's default font when the files are missing.
UiFonts load_fonts(float size_px, float scale);

}  // namespace mnemo::app::ui
