// token_label (viz/charts.h): a token's raw bytes as a printable label.
#include <string>

#include "viz/charts.h"

namespace mnemo::viz {

std::string token_label(std::string_view bytes) {
  static const char kHex[] = "0123456789ABCDEF";
  auto escape = [&](std::string& out, unsigned char b) {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  };
  bool have_font = font_available();
  auto drawable = [&](char32_t cp) {
    if (cp <= 0xA0 || cp == 0xAD) return false;
    if (cp >= 0x300 && cp <= 0x36F) return false;
    if (cp >= 0x2000 && cp <= 0x200F) return false;
    if (cp >= 0x2028 && cp <= 0x202F) return false;
    if (cp >= 0x205F && cp <= 0x206F) return false;
    if (cp == 0xFEFF || cp == 0x2423 || cp == 0x21B5) return false;
    if (cp >= 0xFE00 && cp <= 0xFE0F) return false;
    if (have_font) return font_has_glyph(cp);
    return (cp >= 0xA1 && cp <= 0x24F) || (cp >= 0x370 && cp <= 0x4FF);
  };
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      if (c == ' ') out += "\u2423";
      else if (c == '\n') out += "\u21B5";
      else if (c == '\t') out += "\\t";
      else if (c < 0x20 || c == 0x7F) escape(out, c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t start = i;
    char32_t cp = 0;
    bool ok = decode_utf8(bytes, i, cp);
    if (ok && drawable(cp)) {
      out.append(bytes.data() + start, i - start);
    } else {
      for (size_t k = start; k < i; ++k) escape(out, static_cast<unsigned char>(bytes[k]));
    }
  }
  return out;
}

}  // namespace mnemo::viz
