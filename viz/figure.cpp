#include "viz/figure.h"

#include "viz/font.h"

namespace mnemo::viz {

bool decode_utf8(std::string_view s, size_t& i, char32_t& out) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) {
    out = c;
    ++i;
    return true;
  }
  int extra = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    extra = 1; cp = c & 0x1F; min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    extra = 2; cp = c & 0x0F; min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    extra = 3; cp = c & 0x07; min = 0x10000;
  } else {
    ++i;
    return false;
  }
  if (i + static_cast<size_t>(extra) >= s.size()) {
    ++i;
    return false;
  }
  for (int k = 1; k <= extra; ++k) {
    unsigned char cc = byte(i + k);
    if ((cc & 0xC0) != 0x80) {
      ++i;
      return false;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return false;
  }
  out = cp;
  i += extra + 1;
  return true;
}

namespace {

void append_hex_escape(std::string& out, unsigned char b) {
  static const char kHex[] = "0123456789ABCDEF";
  out += "\\x";
  out += kHex[b >> 4];
  out += kHex[b & 15];
}

}  // namespace

std::string sanitize_text(const std::string& utf8) {
  std::string out;
  out.reserve(utf8.size());
  size_t i = 0;
  while (i < utf8.size()) {
    size_t start = i;
    char32_t cp = 0;
    bool ok = decode_utf8(utf8, i, cp);
    bool control = cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0xFFFE ||
                   cp == 0xFFFF;
    if (ok && !control) {
      out.append(utf8, start, i - start);
    } else {
      for (size_t k = start; k < i; ++k) append_hex_escape(out, static_cast<unsigned char>(utf8[k]));
    }
  }
  return out;
}

float text_width(const std::string& utf8, float size, bool bold) {
  std::string text = sanitize_text(utf8);
  detail::Fonts fonts = detail::acquire_fonts();
  const detail::Face* face = bold ? fonts.bold.get() : fonts.regular.get();
  if (!face) {
    size_t count = 0;
    size_t i = 0;
    char32_t cp = 0;
    while (i < text.size()) {
      decode_utf8(text, i, cp);
      ++count;
    }
    return 0.6f * size * static_cast<float>(count);
  }
  return detail::layout_text(*face, text, size, nullptr);
}


void put_rect(Figure& f, float x, float y, float w, float h, std::optional<Rgb> fill, std::optional<Rgb> stroke,
              float stroke_width, bool cell) {
  Rect r;
  r.x = x;
  r.y = y;
  r.w = w;
  r.h = h;
  r.fill = fill;
  r.stroke = stroke;
  r.stroke_width = stroke_width;
  r.cell = cell;
  f.prims.emplace_back(r);
}

void put_line(Figure& f, float x0, float y0, float x1, float y1, Rgb color, float width, bool dashed) {
  Line l;
  l.x0 = x0;
  l.y0 = y0;
  l.x1 = x1;
  l.y1 = y1;
  l.color = color;
  l.width = width;
  l.dashed = dashed;
  f.prims.emplace_back(l);
}

void put_text(Figure& f, float x, float y, std::string s, float size, Rgb color, Anchor anchor, int rotation, bool bold) {
  if (s.empty()) return;
  Text t;
  t.x = x;
  t.y = y;
  t.text = std::move(s);
  t.size = size;
  t.color = color;
  t.anchor = anchor;
  t.rotation = rotation;
  t.bold = bold;
  f.prims.emplace_back(std::move(t));
}

}  // namespace mnemo::viz
