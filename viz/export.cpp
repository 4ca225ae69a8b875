#include "viz/export.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include <stb_image.h>
#include <stb_image_write.h>

#include "viz/font.h"

namespace mnemo::viz {

ExportError::ExportError(const std::string& path, const std::string& reason)
    : mnemo::IoError(path.empty() ? reason : "cannot write '" + path + "': " + reason),
      path_(path),
      reason_(reason) {}

// ---- atomic file writes ------------------------------------------------------------------

namespace {

std::string temp_token() {
  static const unsigned kProcessToken = std::random_device{}();
  static std::atomic<unsigned> counter{0};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08x-%u", kProcessToken, counter.fetch_add(1));
  return buf;
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  if (path.empty()) throw ExportError(path, "empty path");
  const fs::path target(path);
  if (!target.has_filename()) throw ExportError(path, "path names no file");
  fs::path dir = target.parent_path();
  const std::string dir_text = dir.empty() ? "." : dir.string();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw ExportError(path, "directory '" + dir_text + "' does not exist");
  if (!fs::is_directory(dir, ec)) throw ExportError(path, "'" + dir_text + "' is not a directory");
  if (fs::is_directory(target, ec)) throw ExportError(path, "a directory of that name exists");

  const fs::path temp = dir / ("." + target.filename().string() + ".tmp-" + temp_token());
  FILE* f = std::fopen(temp.string().c_str(), "wb");
  if (!f) {
    int err = errno;
    throw ExportError(path, "cannot create a file in '" + dir_text + "': " + std::strerror(err));
  }
  bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  int err = ok ? 0 : errno;
  if (std::fflush(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    fs::remove(temp, ec);
    throw ExportError(path, std::string("write failed: ") + std::strerror(err ? err : EIO));
  }
  fs::rename(temp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw ExportError(path, "rename failed: " + ec.message());
  }
}

// ---- SVG ---------------------------------------------------------------------------------

namespace {

void append_num(std::string& out, float v) {
  if (!std::isfinite(v)) v = 0;
  long long k = std::llround(static_cast<double>(v) * 100.0);
  if (k < 0) {
    out += '-';
    k = -k;
  }
  char buf[32];
  int n = std::snprintf(buf, sizeof buf, "%lld", k / 100);
  out.append(buf, static_cast<size_t>(n));
  int frac = static_cast<int>(k % 100);
  if (frac != 0) {
    out += '.';
    out += static_cast<char>('0' + frac / 10);
    if (frac % 10) out += static_cast<char>('0' + frac % 10);
  }
}

void append_color(std::string& out, Rgb c) {
  static const char kHex[] = "0123456789abcdef";
  out += '#';
  for (uint8_t v : {c.r, c.g, c.b}) {
    out += kHex[v >> 4];
    out += kHex[v & 15];
  }
}

void append_escaped(std::string& out, const std::string& text) {
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += ch;
    }
  }
}

void attr(std::string& out, const char* name, float v) {
  out += ' ';
  out += name;
  out += "=\"";
  append_num(out, v);
  out += '"';
}

void check_rotation(const Text& t) {
  if (t.rotation != 0 && t.rotation != -90)
    throw std::invalid_argument("Text.rotation: must be 0 or -90 (got " +
                                std::to_string(t.rotation) + ")");
}

}  // namespace

std::string to_svg(const Figure& fig) {
  std::string out;
  out.reserve(512 + fig.prims.size() * 96);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"";
  attr(out, "width", fig.width);
  attr(out, "height", fig.height);
  out += " viewBox=\"0 0 ";
  append_num(out, fig.width);
  out += ' ';
  append_num(out, fig.height);
  out += "\">\n<style>rect.cell{shape-rendering:crispEdges}</style>\n";
  out += "<rect x=\"0\" y=\"0\"";
  attr(out, "width", fig.width);
  attr(out, "height", fig.height);
  out += " fill=\"";
  append_color(out, fig.background);
  out += "\"/>\n";
  for (const Prim& prim : fig.prims) {
    if (const Rect* r = std::get_if<Rect>(&prim)) {
      out += r->cell ? "<rect class=\"cell\"" : "<rect";
      attr(out, "x", r->x);
      attr(out, "y", r->y);
      attr(out, "width", std::max(0.0f, r->w));
      attr(out, "height", std::max(0.0f, r->h));
      out += " fill=\"";
      if (r->fill) append_color(out, *r->fill);
      else out += "none";
      out += '"';
      if (r->stroke) {
        out += " stroke=\"";
        append_color(out, *r->stroke);
        out += '"';
        attr(out, "stroke-width", r->stroke_width);
      }
      out += "/>\n";
    } else if (const Line* l = std::get_if<Line>(&prim)) {
      out += "<line";
      attr(out, "x1", l->x0);
      attr(out, "y1", l->y0);
      attr(out, "x2", l->x1);
      attr(out, "y2", l->y1);
      out += " stroke=\"";
      append_color(out, l->color);
      out += '"';
      attr(out, "stroke-width", l->width);
      if (l->dashed) {
        float w = std::max(1.0f, l->width);
        out += " stroke-dasharray=\"";
        append_num(out, 4 * w);
        out += ' ';
        append_num(out, 3 * w);
        out += '"';
      }
      out += "/>\n";
    } else if (const Text* t = std::get_if<Text>(&prim)) {
      check_rotation(*t);
      out += "<text";
      attr(out, "x", t->x);
      attr(out, "y", t->y);
      attr(out, "font-size", t->size);
      out += " font-family=\"DejaVu Sans, Verdana, sans-serif\" fill=\"";
      append_color(out, t->color);
      out += '"';
      if (t->anchor == Anchor::Middle) out += " text-anchor=\"middle\"";
      if (t->anchor == Anchor::End) out += " text-anchor=\"end\"";
      if (t->bold) out += " font-weight=\"bold\"";
      if (t->rotation == -90) {
        out += " transform=\"rotate(-90 ";
        append_num(out, t->x);
        out += ' ';
        append_num(out, t->y);
        out += ")\"";
      }
      out += " xml:space=\"preserve\">";
      append_escaped(out, sanitize_text(t->text));
      out += "</text>\n";
    }
  }
  out += "</svg>\n";
  return out;
}

void write_svg(const Figure& fig, const std::string& path) { write_file_atomic(path, to_svg(fig)); }

// ---- raster ------------------------------------------------------------------------------

namespace {

struct Canvas {
  int w = 0, h = 0;
  std::vector<uint8_t> px;  // RGBA

  void fill(int x0, int y0, int x1, int y1, Rgb c) {
    x0 = std::max(x0, 0);
    y0 = std::max(y0, 0);
    x1 = std::min(x1, w);
    y1 = std::min(y1, h);
    for (int y = y0; y < y1; ++y) {
      uint8_t* p = &px[(static_cast<size_t>(y) * w + x0) * 4];
      for (int x = x0; x < x1; ++x, p += 4) {
        p[0] = c.r;
        p[1] = c.g;
        p[2] = c.b;
      }
    }
  }

  void blend(int x, int y, Rgb c, float a) {
    if (x < 0 || y < 0 || x >= w || y >= h || a <= 0) return;
    if (a > 1) a = 1;
    uint8_t* p = &px[(static_cast<size_t>(y) * w + x) * 4];
    p[0] = static_cast<uint8_t>(p[0] + (c.r - p[0]) * a + 0.5f);
    p[1] = static_cast<uint8_t>(p[1] + (c.g - p[1]) * a + 0.5f);
    p[2] = static_cast<uint8_t>(p[2] + (c.b - p[2]) * a + 0.5f);
  }
};

// Pixel edge for a figure coordinate; the +1e-3 bias keeps shared edges of neighbouring
// rectangles from opening a one-pixel gap through float error.
int edge(float v, float scale) { return static_cast<int>(std::floor(v * scale + 0.5f + 1e-3f)); }

void draw_rect_snapped(Canvas& cv, float x0, float y0, float x1, float y1, float scale, Rgb c) {
  int px0 = edge(x0, scale), px1 = edge(x1, scale);
  int py0 = edge(y0, scale), py1 = edge(y1, scale);
  if (px1 <= px0 && x1 > x0) px1 = px0 + 1;
  if (py1 <= py0 && y1 > y0) py1 = py0 + 1;
  cv.fill(px0, py0, px1, py1, c);
}

void draw_rect(Canvas& cv, const Rect& r, float scale) {
  if (r.fill) draw_rect_snapped(cv, r.x, r.y, r.x + r.w, r.y + r.h, scale, *r.fill);
  if (r.stroke && r.stroke_width > 0) {
    // Stroke thickness in whole pixels (>= 1), centred on each edge.
    int t = std::max(1, static_cast<int>(std::lround(r.stroke_width * scale)));
    int left = edge(r.x, scale), right = edge(r.x + r.w, scale);
    int top = edge(r.y, scale), bottom = edge(r.y + r.h, scale);
    int lo = t / 2, hi = t - t / 2;
    cv.fill(left - lo, top - lo, right + hi, top + hi, *r.stroke);
    cv.fill(left - lo, bottom - lo, right + hi, bottom + hi, *r.stroke);
    cv.fill(left - lo, top - lo, left + hi, bottom + hi, *r.stroke);
    cv.fill(right - lo, top - lo, right + hi, bottom + hi, *r.stroke);
  }
}

void draw_line(Canvas& cv, const Line& l, float scale) {
  const float dash = 4 * std::max(1.0f, l.width) * scale;
  const float gap = 3 * std::max(1.0f, l.width) * scale;
  const bool vertical = l.x0 == l.x1, horizontal = l.y0 == l.y1;
  if (vertical || horizontal) {
    // Crisp: whole-pixel thickness, centred on the line.
    int t = std::max(1, static_cast<int>(std::lround(l.width * scale)));
    float c = (vertical ? l.x0 : l.y0) * scale;
    int a = static_cast<int>(std::floor(c - t / 2.0f + 0.5f));
    float s0 = (vertical ? std::min(l.y0, l.y1) : std::min(l.x0, l.x1));
    float s1 = (vertical ? std::max(l.y0, l.y1) : std::max(l.x0, l.x1));
    int p0 = edge(s0, scale), p1 = edge(s1, scale);
    if (p1 <= p0) p1 = p0 + 1;
    int pos = p0;
    while (pos < p1) {
      int end = p1;
      if (l.dashed) end = std::min(p1, pos + std::max(1, static_cast<int>(std::lround(dash))));
      if (vertical) cv.fill(a, pos, a + t, end, l.color);
      else cv.fill(pos, a, end, a + t, l.color);
      if (!l.dashed) break;
      pos = end + std::max(1, static_cast<int>(std::lround(gap)));
    }
    return;
  }
  // Anti-aliased: coverage from the distance to the segment (box filter approximation).
  const float ax = l.x0 * scale, ay = l.y0 * scale, bx = l.x1 * scale, by = l.y1 * scale;
  const float dx = bx - ax, dy = by - ay;
  const float len = std::sqrt(dx * dx + dy * dy);
  if (len <= 0) return;
  const float ux = dx / len, uy = dy / len;
  const float hw = std::max(0.5f, l.width * scale / 2);
  int x0 = static_cast<int>(std::floor(std::min(ax, bx) - hw - 1));
  int x1 = static_cast<int>(std::ceil(std::max(ax, bx) + hw + 1));
  int y0 = static_cast<int>(std::floor(std::min(ay, by) - hw - 1));
  int y1 = static_cast<int>(std::ceil(std::max(ay, by) + hw + 1));
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, cv.w);
  y1 = std::min(y1, cv.h);
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) {
      float px = x + 0.5f - ax, py = y + 0.5f - ay;
      float along = px * ux + py * uy;
      float perp = std::fabs(px * uy - py * ux);
      float cov = std::clamp(hw + 0.5f - perp, 0.0f, 1.0f) *
                  std::clamp(std::min(along, len - along) + 0.5f, 0.0f, 1.0f);
      if (cov <= 0) continue;
      if (l.dashed) {
        float phase = std::fmod(std::max(along, 0.0f), dash + gap);
        cov *= std::clamp(std::min(phase + 0.5f, dash - phase + 0.5f), 0.0f, 1.0f);
      }
      cv.blend(x, y, l.color, cov);
    }
  }
}

void draw_text(Canvas& cv, const Text& t, float scale, const detail::Fonts& fonts) {
  const detail::Face* face = t.bold ? fonts.bold.get() : fonts.regular.get();
  if (!face) return;
  const std::string text = sanitize_text(t.text);
  if (text.empty() || !(t.size > 0)) return;
  const float size = t.size * scale;
  std::vector<detail::PlacedGlyph> glyphs;
  const float width = detail::layout_text(*face, text, size, &glyphs);
  const float start = t.anchor == Anchor::Start ? 0 : t.anchor == Anchor::Middle ? -width / 2 : -width;
  const float X = t.x * scale, Y = t.y * scale;
  detail::GlyphBitmap bm;
  for (const auto& g : glyphs) {
    const float u = start + g.pen;
    if (t.rotation == 0) {
      const float gx = X + u;
      const int ix = static_cast<int>(std::floor(gx)), iy = static_cast<int>(std::floor(Y));
      detail::render_glyph(*face, g.glyph, size, gx - ix, Y - iy, bm);
      for (int j = 0; j < bm.h; ++j)
        for (int i = 0; i < bm.w; ++i) {
          uint8_t a = bm.alpha[static_cast<size_t>(j) * bm.w + i];
          if (a) cv.blend(ix + bm.x0 + i, iy + bm.y0 + j, t.color, a / 255.0f);
        }
    } else {
      // rotate(-90): advance goes up the screen, glyph "down" goes right.
      const float fy = Y - u;
      const float k = std::ceil(fy);
      const int ix = static_cast<int>(std::floor(X));
      detail::render_glyph(*face, g.glyph, size, k - fy, X - ix, bm);
      const int K = static_cast<int>(k);
      for (int j = 0; j < bm.h; ++j)
        for (int i = 0; i < bm.w; ++i) {
          uint8_t a = bm.alpha[static_cast<size_t>(j) * bm.w + i];
          if (a) cv.blend(ix + bm.y0 + j, K - bm.x0 - i - 1, t.color, a / 255.0f);
        }
    }
  }
}

}  // namespace

std::vector<uint8_t> render_rgba(const Figure& fig, float scale, int* w_out, int* h_out) {
  if (!(scale > 0) || !std::isfinite(scale))
    throw ExportError("", "render: scale must be finite and > 0");
  double wd = std::ceil(static_cast<double>(fig.width) * scale - 1e-3);
  double hd = std::ceil(static_cast<double>(fig.height) * scale - 1e-3);
  if (!(wd >= 1) || !(hd >= 1)) throw ExportError("", "render: figure has no area");
  if (wd > 32768 || hd > 32768 || wd * hd > 400e6)
    throw ExportError("", "render: image of " + std::to_string(static_cast<long long>(wd)) + "x" +
                              std::to_string(static_cast<long long>(hd)) + " px is too large");
  bool has_text = false;
  for (const Prim& p : fig.prims)
    if (const Text* t = std::get_if<Text>(&p)) {
      check_rotation(*t);
      has_text = true;
    }
  detail::Fonts fonts;
  if (has_text) {
    fonts = detail::acquire_fonts();
    if (!fonts.regular)
      throw ExportError("", "render: font '" + font_path() +
                                "' could not be loaded (set MNEMO_FONT or call set_font_path)");
  }
  Canvas cv;
  cv.w = static_cast<int>(wd);
  cv.h = static_cast<int>(hd);
  cv.px.resize(static_cast<size_t>(cv.w) * cv.h * 4, 255);
  cv.fill(0, 0, cv.w, cv.h, fig.background);
  for (const Prim& p : fig.prims) {
    if (const Rect* r = std::get_if<Rect>(&p)) draw_rect(cv, *r, scale);
    else if (const Line* l = std::get_if<Line>(&p)) draw_line(cv, *l, scale);
    else if (const Text* t = std::get_if<Text>(&p)) draw_text(cv, *t, scale, fonts);
  }
  if (w_out) *w_out = cv.w;
  if (h_out) *h_out = cv.h;
  return std::move(cv.px);
}

namespace {

void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::string*>(context);
  out->append(static_cast<const char*>(data), static_cast<size_t>(size));
}

}  // namespace

void write_png(const Figure& fig, const std::string& path, float scale) {
  int w = 0, h = 0;
  std::vector<uint8_t> rgba;
  try {
    rgba = render_rgba(fig, scale, &w, &h);
  } catch (const ExportError& e) {
    throw ExportError(path, e.reason());
  }
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0, n = static_cast<size_t>(w) * h; i < n; ++i) {
    rgb[i * 3 + 0] = rgba[i * 4 + 0];
    rgb[i * 3 + 1] = rgba[i * 4 + 1];
    rgb[i * 3 + 2] = rgba[i * 4 + 2];
  }
  rgba.clear();
  rgba.shrink_to_fit();
  std::string png;
  png.reserve(rgb.size() / 4);
  if (!stbi_write_png_to_func(append_bytes, &png, w, h, 3, rgb.data(), w * 3))
    throw ExportError(path, "PNG encoding failed");
  write_file_atomic(path, png);
}

std::vector<uint8_t> read_png_rgba(const std::string& path, int* w, int* h) {
  int iw = 0, ih = 0, channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &iw, &ih, &channels, 4);
  if (!data) {
    const char* why = stbi_failure_reason();
    throw ExportError("", "cannot read '" + path + "': " + (why ? why : "unknown error"));
  }
  std::vector<uint8_t> out(data, data + static_cast<size_t>(iw) * ih * 4);
  stbi_image_free(data);
  if (w) *w = iw;
  if (h) *h = ih;
  return out;
}

// ---- CSV ---------------------------------------------------------------------------------

std::string csv_field(std::string_view field) {
  bool quote = field.find_first_of(",\"\r\n") != std::string_view::npos ||
               (!field.empty() && (field.front() == ' ' || field.back() == ' '));
  if (!quote) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void write_csv_matrix(const std::string& path, int rows, int cols, const std::vector<float>& values,
                      const std::vector<std::string>& row_labels,
                      const std::vector<std::string>& col_labels) {
  if (rows < 0) throw std::invalid_argument("write_csv_matrix.rows: must be >= 0");
  if (cols < 0) throw std::invalid_argument("write_csv_matrix.cols: must be >= 0");
  const size_t r = static_cast<size_t>(rows), c = static_cast<size_t>(cols);
  if (values.size() != r * c)
    throw std::invalid_argument("write_csv_matrix.values: has " + std::to_string(values.size()) +
                                " entries, rows*cols = " + std::to_string(r * c));
  if (!row_labels.empty() && row_labels.size() != r)
    throw std::invalid_argument("write_csv_matrix.row_labels: has " +
                                std::to_string(row_labels.size()) + " entries, expected 0 or " +
                                std::to_string(r));
  if (!col_labels.empty() && col_labels.size() != c)
    throw std::invalid_argument("write_csv_matrix.col_labels: has " +
                                std::to_string(col_labels.size()) + " entries, expected 0 or " +
                                std::to_string(c));
  std::string out;
  out.reserve(16 + r * c * 12);
  for (size_t j = 0; j < c; ++j) {
    out += ',';
    out += col_labels.empty() ? std::to_string(j) : csv_field(col_labels[j]);
  }
  out += '\n';
  for (size_t i = 0; i < r; ++i) {
    out += row_labels.empty() ? std::to_string(i) : csv_field(row_labels[i]);
    for (size_t j = 0; j < c; ++j) {
      out += ',';
      out += csv_number(values[i * c + j]);
    }
    out += '\n';
  }
  write_file_atomic(path, out);
}

void write_csv_table(const std::string& path, const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows) {
  for (size_t i = 0; i < rows.size(); ++i)
    if (!header.empty() && rows[i].size() != header.size())
      throw std::invalid_argument("write_csv_table.rows[" + std::to_string(i) + "]: has " +
                                  std::to_string(rows[i].size()) + " fields, header has " +
                                  std::to_string(header.size()));
  std::string out;
  auto line = [&out](const std::vector<std::string>& fields) {
    for (size_t j = 0; j < fields.size(); ++j) {
      if (j) out += ',';
      out += csv_field(fields[j]);
    }
    out += '\n';
  };
  if (!header.empty()) line(header);
  for (const auto& row : rows) line(row);
  write_file_atomic(path, out);
}

}  // namespace mnemo::viz
