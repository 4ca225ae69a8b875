#include "viz/font.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <stb_truetype.h>

#include "viz/figure.h"

#ifndef MNEMO_FONT_PATH
#define MNEMO_FONT_PATH "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
#endif

namespace mnemo::viz {
namespace detail {

struct Face {
  std::vector<unsigned char> data;
  stbtt_fontinfo info{};
  float units_per_em = 2048.0f;
};

namespace {

std::mutex g_font_mutex;
std::string g_override_path;     // set_font_path()
std::string g_loaded_path;       // path the cached fonts came from
bool g_loaded = false;
Fonts g_fonts;

std::shared_ptr<const Face> load_face(const std::string& path) {
  if (path.empty()) return nullptr;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return nullptr;
  auto face = std::make_shared<Face>();
  unsigned char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) face->data.insert(face->data.end(), buf, buf + n);
  std::fclose(f);
  if (face->data.size() < 12) return nullptr;
  int offset = stbtt_GetFontOffsetForIndex(face->data.data(), 0);
  if (offset < 0 || !stbtt_InitFont(&face->info, face->data.data(), offset)) return nullptr;
  // 1 / ScaleForMappingEmToPixels(1) = units per em.
  float s = stbtt_ScaleForMappingEmToPixels(&face->info, 1.0f);
  if (s > 0) face->units_per_em = 1.0f / s;
  return face;
}

std::string bold_path_for(const std::string& regular) {
  size_t dot = regular.rfind('.');
  size_t slash = regular.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return {};
  return regular.substr(0, dot) + "-Bold" + regular.substr(dot);
}

std::string resolve_path_locked() {
  if (!g_override_path.empty()) return g_override_path;
  const char* env = std::getenv("MNEMO_FONT");
  if (env && *env) return env;
  return MNEMO_FONT_PATH;
}

}  // namespace

Fonts acquire_fonts() {
  std::lock_guard<std::mutex> lock(g_font_mutex);
  std::string path = resolve_path_locked();
  if (!g_loaded || path != g_loaded_path) {
    g_fonts = Fonts{};
    g_fonts.regular = load_face(path);
    if (g_fonts.regular) {
      g_fonts.bold = load_face(bold_path_for(path));
      if (!g_fonts.bold) g_fonts.bold = g_fonts.regular;
    }
    g_loaded_path = path;
    g_loaded = true;
  }
  return g_fonts;
}

float layout_text(const Face& face, const std::string& text, float size,
                  std::vector<PlacedGlyph>* out) {
  const float scale = size / face.units_per_em;
  float pen = 0;
  int prev = -1;
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    if (!decode_utf8(text, i, cp)) cp = 0xFFFD;
    int glyph = stbtt_FindGlyphIndex(&face.info, static_cast<int>(cp));
    if (prev >= 0) pen += scale * stbtt_GetGlyphKernAdvance(&face.info, prev, glyph);
    if (out) out->push_back({glyph, pen});
    int advance = 0, lsb = 0;
    stbtt_GetGlyphHMetrics(&face.info, glyph, &advance, &lsb);
    pen += scale * advance;
    prev = glyph;
  }
  return pen;
}

bool has_glyph(const Face& face, char32_t codepoint) {
  return stbtt_FindGlyphIndex(&face.info, static_cast<int>(codepoint)) != 0;
}

void render_glyph(const Face& face, int glyph, float size, float shift_x, float shift_y,
                  GlyphBitmap& out) {
  const float scale = size / face.units_per_em;
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  stbtt_GetGlyphBitmapBoxSubpixel(&face.info, glyph, scale, scale, shift_x, shift_y, &x0, &y0,
                                  &x1, &y1);
  out.x0 = x0;
  out.y0 = y0;
  out.w = x1 > x0 ? x1 - x0 : 0;
  out.h = y1 > y0 ? y1 - y0 : 0;
  out.alpha.assign(static_cast<size_t>(out.w) * out.h, 0);
  if (out.w == 0 || out.h == 0) return;
  stbtt_MakeGlyphBitmapSubpixel(&face.info, out.alpha.data(), out.w, out.h, out.w, scale, scale,
                                shift_x, shift_y, glyph);
}

}  // namespace detail

void set_font_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(detail::g_font_mutex);
  detail::g_override_path = path;
}

std::string font_path() {
  std::lock_guard<std::mutex> lock(detail::g_font_mutex);
  return detail::resolve_path_locked();
}

bool font_available() { return detail::acquire_fonts().regular != nullptr; }

bool font_has_glyph(char32_t codepoint) {
  detail::Fonts fonts = detail::acquire_fonts();
  return fonts.regular && detail::has_glyph(*fonts.regular, codepoint);
}

}  // namespace mnemo::viz
