// Internal to viz: TrueType access for figure.cpp (metrics) and export.cpp (rasteriser).
// Keeps stb_truetype out of every public header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mnemo::viz::detail {

struct Face;  // owns the font file bytes and the parsed stbtt_fontinfo

// regular == nullptr when no font could be loaded; bold falls back to regular.
struct Fonts {
  std::shared_ptr<const Face> regular;
  std::shared_ptr<const Face> bold;
};
Fonts acquire_fonts();

struct PlacedGlyph {
  int glyph = 0;
  float pen = 0;  // advance-direction offset in px from the start of the text
};

// Lays out already-sanitised UTF-8 text at em size `size` px (kerning included) and returns
// its advance width in px; fills `out` when non-null.
float layout_text(const Face& face, const std::string& text, float size,
                  std::vector<PlacedGlyph>* out);

bool has_glyph(const Face& face, char32_t codepoint);

struct GlyphBitmap {
  int w = 0, h = 0;    // bitmap size
  int x0 = 0, y0 = 0;  // offset of the bitmap's top-left from the pen (y down)
  std::vector<uint8_t> alpha;
};
// Renders `glyph` at em size `size` px with the given subpixel shifts (each in [0,1)).
void render_glyph(const Face& face, int glyph, float size, float shift_x, float shift_y,
                  GlyphBitmap& out);

}  // namespace mnemo::viz::detail
