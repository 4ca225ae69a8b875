// A tiny vector scene shared by the chart builders and the SVG / PNG writers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "viz/colormap.h"

namespace mnemo::viz {

// Primitives. Units are CSS px at scale 1; x grows right, y grows down.
// Drawing order is the order in Figure::prims (later on top).

// Axis-aligned rectangle. fill = nullopt draws the outline only. The stroke is centred on the
// edge (as in SVG). cell = true marks a data cell: the SVG writer gives it class="cell".
// The rasteriser snaps rectangles to whole pixels so adjacent cells never leave seams.
struct Rect {
  float x = 0, y = 0, w = 0, h = 0;
  std::optional<Rgb> fill = Rgb{0, 0, 0};
  std::optional<Rgb> stroke;
  float stroke_width = 1.0f;
  bool cell = false;
};

// Straight segment with butt caps. dashed: dash 4*w, gap 3*w (w = max(width, 1)).
struct Line {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  Rgb color{0, 0, 0};
  float width = 1.0f;
  bool dashed = false;
};

enum class Anchor { Start, Middle, End };

// One line of text. (x, y) is the anchor point on the baseline (as SVG text). text is UTF-8;
// both writers pass it through sanitize_text(). rotation is 0 or -90 (degrees, about (x, y);
// -90 reads bottom-to-top, as a y-axis label). size is the em size in px (CSS font-size).
struct Text {
  float x = 0, y = 0;
  std::string text;
  float size = 12.0f;
  Rgb color{0, 0, 0};
  Anchor anchor = Anchor::Start;
  int rotation = 0;
  bool bold = false;
};

using Prim = std::variant<Rect, Line, Text>;

struct Figure {
  float width = 0, height = 0;
  Rgb background{255, 255, 255};
  std::vector<Prim> prims;
};

// Emit helpers: append one primitive to f.prims (the chart builders and app/figures use them).
void put_rect(Figure& f, float x, float y, float w, float h, std::optional<Rgb> fill,
              std::optional<Rgb> stroke = std::nullopt, float stroke_width = 1.0f, bool cell = false);
void put_line(Figure& f, float x0, float y0, float x1, float y1, Rgb color, float width = 1.0f, bool dashed = false);
// Nothing is added for empty text.
void put_text(Figure& f, float x, float y, std::string s, float size, Rgb color, Anchor anchor = Anchor::Start,
              int rotation = 0, bool bold = false);

// Font. The font file is chosen, first match wins, from: set_font_path() (non-empty),
// the environment variable MNEMO_FONT, the compile-time MNEMO_FONT_PATH. Bold text uses
// "<stem>-Bold.ttf" next to it when that exists (DejaVuSans-Bold.ttf), else the regular face.
// The font is loaded lazily on first use and shared; all functions are thread-safe.
// set_font_path("") returns to the env / default choice.
void set_font_path(const std::string& path);
std::string font_path();       // the path that would be / is used
bool font_available();         // true when that file loads as a TrueType font
bool font_has_glyph(char32_t codepoint);  // false when no font, or the font lacks it

// Font metrics. text_width(): advance width in px of the sanitised text at em size `size`,
// kerning included, exactly as the rasteriser lays it out. Without a font it falls back to
// an estimate of 0.6 * size per code point (so layout still leaves room).
// kAscent / kDescent / kCapHeight: DejaVu Sans proportions of the em size, for layout.
float text_width(const std::string& utf8, float size, bool bold = false);
inline constexpr float kCapHeight = 0.73f;
inline constexpr float kAscent = 0.93f;
inline constexpr float kDescent = 0.24f;

// Text both writers actually draw: valid UTF-8 is kept; each invalid byte and each C0/C1
// control character (and DEL) becomes the visible escape "\xHH" (one per byte), so SVG stays
// legal XML 1.0 and the PNG shows the same characters.
std::string sanitize_text(const std::string& utf8);

// Decodes one code point starting at s[i]; advances i. Returns false (and advances i by one)
// on an invalid or overlong sequence, a surrogate, or a value above U+10FFFF.
bool decode_utf8(std::string_view s, size_t& i, char32_t& out);

}  // namespace mnemo::viz
