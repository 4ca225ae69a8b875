// Tests for the viz module: colormaps, chart layout, SVG / PNG / CSV writers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "viz/charts.h"
#include "viz/colormap.h"
#include "viz/export.h"
#include "viz/figure.h"

namespace fs = std::filesystem;
using namespace mnemo::viz;

namespace {

// A fresh directory under the system temp dir, removed when the test ends.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("mnemo_viz_test_" + std::to_string(rd()) + "_" +
                                        std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count_occurrences(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1)) ++n;
  return n;
}

// Minimal XML well-formedness check: balanced tags, quoted attributes, no stray '<' or
// unescaped '&' in text, no control characters. Returns "" when fine, else the problem.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> stack;
  size_t i = 0;
  bool seen_root = false;
  auto is_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ':' ||
           c == '.';
  };
  auto check_text = [&](size_t a, size_t b) -> std::string {
    for (size_t k = a; k < b; ++k) {
      unsigned char c = static_cast<unsigned char>(xml[k]);
      if (c < 0x20 && c != '\n' && c != '\t' && c != '\r')
        return "control byte " + std::to_string(c) + " at " + std::to_string(k);
      if (c == '>') return "raw '>' in text at " + std::to_string(k);
      if (c == '&') {
        size_t semi = xml.find(';', k);
        if (semi == std::string::npos || semi > b) return "bad entity at " + std::to_string(k);
        std::string ent = xml.substr(k, semi - k + 1);
        if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" &&
            ent != "&apos;" && ent.rfind("&#", 0) != 0)
          return "unknown entity " + ent;
      }
    }
    return "";
  };
  while (i < xml.size()) {
    size_t lt = xml.find('<', i);
    if (lt == std::string::npos) lt = xml.size();
    std::string p = check_text(i, lt);
    if (!p.empty()) return p;
    if (lt == xml.size()) break;
    if (xml.compare(lt, 5, "<?xml") == 0) {
      size_t end = xml.find("?>", lt);
      if (end == std::string::npos) return "unterminated declaration";
      i = end + 2;
      continue;
    }
    size_t k = lt + 1;
    bool closing = false;
    if (k < xml.size() && xml[k] == '/') {
      closing = true;
      ++k;
    }
    size_t name_start = k;
    while (k < xml.size() && is_name(xml[k])) ++k;
    std::string name = xml.substr(name_start, k - name_start);
    if (name.empty()) return "empty tag name at " + std::to_string(lt);
    if (closing) {
      if (k >= xml.size() || xml[k] != '>') return "bad closing tag </" + name;
      if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
      stack.pop_back();
      i = k + 1;
      continue;
    }
    // attributes
    bool self_closing = false;
    while (true) {
      while (k < xml.size() && std::isspace(static_cast<unsigned char>(xml[k]))) ++k;
      if (k >= xml.size()) return "unterminated tag <" + name;
      if (xml[k] == '>') {
        ++k;
        break;
      }
      if (xml[k] == '/' && k + 1 < xml.size() && xml[k + 1] == '>') {
        self_closing = true;
        k += 2;
        break;
      }
      size_t an = k;
      while (k < xml.size() && is_name(xml[k])) ++k;
      if (k == an) return "bad attribute in <" + name + "> at " + std::to_string(k);
      if (k >= xml.size() || xml[k] != '=') return "attribute without '=' in <" + name;
      ++k;
      if (k >= xml.size() || (xml[k] != '"' && xml[k] != '\'')) return "unquoted attribute in <" + name;
      char q = xml[k++];
      size_t end = xml.find(q, k);
      if (end == std::string::npos) return "unterminated attribute in <" + name;
      if (xml.substr(k, end - k).find('<') != std::string::npos) return "'<' in attribute";
      std::string ap = check_text(k, end);
      if (!ap.empty()) return ap;
      k = end + 1;
    }
    if (stack.empty()) {
      if (seen_root) return "second root element <" + name + ">";
      seen_root = true;
    }
    if (!self_closing) stack.push_back(name);
    i = k;
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (!seen_root) return "no root element";
  return "";
}

// RFC 4180 reader for the round-trip test.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
      any = false;
    } else {
      field += c;
      any = true;
    }
  }
  if (any) {
    row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

HeatmapSpec small_heatmap(int rows, int cols) {
  HeatmapSpec s;
  s.title = "Attention";
  s.x_label = "key";
  s.y_label = "slot";
  s.colorbar_label = "weight";
  s.rows = rows;
  s.cols = cols;
  for (int i = 0; i < rows * cols; ++i) s.values.push_back(static_cast<float>(i) / (rows * cols - 1));
  for (int r = 0; r < rows; ++r) s.row_labels.push_back("slot " + std::to_string(r));
  for (int c = 0; c < cols; ++c) s.col_labels.push_back("t" + std::to_string(c));
  return s;
}

std::vector<const Rect*> cells_of(const Figure& f) {
  std::vector<const Rect*> out;
  for (const auto& p : f.prims)
    if (const Rect* r = std::get_if<Rect>(&p))
      if (r->cell) out.push_back(r);
  return out;
}

Rgb pixel(const std::vector<uint8_t>& rgba, int w, int x, int y) {
  const uint8_t* p = &rgba[(static_cast<size_t>(y) * w + x) * 4];
  return {p[0], p[1], p[2]};
}

bool near(Rgb a, Rgb b, int tol) {
  return std::abs(a.r - b.r) <= tol && std::abs(a.g - b.g) <= tol && std::abs(a.b - b.b) <= tol;
}

std::string expect_invalid(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no exception>";
}

struct FontPathGuard {
  ~FontPathGuard() { set_font_path(""); }
};

}  // namespace

TEST_CASE("viz: colormap anchors, clamping and NaN marker") {
  // Published viridis values: #440154, #21918c, #fde725.
  CHECK(sample(Colormap::Viridis, 0.0f) == Rgb{68, 1, 84});
  CHECK(sample(Colormap::Viridis, 1.0f) == Rgb{253, 231, 37});
  CHECK(near(sample(Colormap::Viridis, 0.5f), Rgb{33, 145, 140}, 2));
  CHECK(near(sample(Colormap::Viridis, 0.25f), Rgb{59, 82, 139}, 3));
  CHECK(sample(Colormap::Magma, 0.0f) == Rgb{0, 0, 4});
  CHECK(sample(Colormap::Magma, 1.0f) == Rgb{252, 253, 191});
  CHECK(sample(Colormap::Gray, 0.0f) == Rgb{0, 0, 0});
  CHECK(sample(Colormap::Gray, 1.0f) == Rgb{255, 255, 255});

  Rgb mid = sample(Colormap::Diverging, 0.5f);
  CHECK(mid.r >= 240);
  CHECK(mid.g >= 240);
  CHECK(mid.b >= 240);
  Rgb lo = sample(Colormap::Diverging, 0.0f), hi = sample(Colormap::Diverging, 1.0f);
  CHECK(lo.b > lo.r + 40);  // blue end
  CHECK(hi.r > hi.b + 40);  // red end
  // Balanced: equal steps from the centre are about equally light.
  auto light = [](Rgb c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b; };
  CHECK(std::fabs(light(sample(Colormap::Diverging, 0.3f)) - light(sample(Colormap::Diverging, 0.7f))) < 30);

  CHECK(sample(Colormap::Viridis, -3.0f) == sample(Colormap::Viridis, 0.0f));
  CHECK(sample(Colormap::Viridis, 7.0f) == sample(Colormap::Viridis, 1.0f));
  CHECK(sample(Colormap::Viridis, INFINITY) == sample(Colormap::Viridis, 1.0f));
  for (Colormap m : {Colormap::Viridis, Colormap::Magma, Colormap::Diverging, Colormap::Gray}) {
    CHECK(sample(m, NAN) == nan_color(m));
    // The marker is far from every colour of the map.
    for (int i = 0; i <= 100; ++i) CHECK_FALSE(near(sample(m, i / 100.0f), nan_color(m), 40));
    CHECK(parse_colormap(colormap_name(m)) == m);
  }
  CHECK(sample(Colormap::Viridis, NAN) == kNanColor);
  CHECK(parse_colormap("RdBu") == Colormap::Diverging);
  CHECK(parse_colormap("Grey") == Colormap::Gray);
  CHECK_FALSE(parse_colormap("jet").has_value());
}

TEST_CASE("viz: ticks and number formatting") {
  std::vector<double> t = nice_ticks(0, 1, 6);
  REQUIRE(t.size() == 6);
  CHECK(t.front() == doctest::Approx(0));
  CHECK(t[1] == doctest::Approx(0.2));
  CHECK(t.back() == doctest::Approx(1));
  t = nice_ticks(0.013, 0.87, 5);
  CHECK(t.size() >= 3);
  CHECK(t.size() <= 5);
  for (double v : t) {
    CHECK(v >= 0.013);
    CHECK(v <= 0.87);
  }
  CHECK(format_tick(0.2, 0.2) == "0.2");
  CHECK(format_tick(-1e-17, 0.05) == "0.00");
  CHECK(format_tick(1500, 500) == "1500");
  // A log axis's ticks are labelled by their value: decades as the figures write them, the
  // ticks inside a decade (a perplexity curve between 5 and 7) with 3 digits, never "1e0.8".
  CHECK(format_log_tick(0.8) == "6.31");
  CHECK(format_log_tick(0.7) == "5.01");
  CHECK(format_log_tick(1.0) == "10");
  CHECK(format_log_tick(-2.0) == "0.01");
  CHECK(format_log_tick(6.0) == "1e6");
  CHECK(format_log_tick(2.5) == "316");
  // One tick in range (the dashboard's RMT block-mass chart, 0.45..0.55): labelled by the range, not "0".
  t = nice_ticks(0.45, 0.55, 2);
  REQUIRE(t.size() == 1);
  CHECK(t[0] == doctest::Approx(0.5));
  CHECK(format_tick(t[0], tick_step(t, 0.45, 0.55)) == "0.5");
  CHECK(tick_step({0.0, 0.25, 0.5}, 0.0, 0.5) == doctest::Approx(0.25));
  CHECK(tick_step({}, 3.0, 3.0) == 1.0);
}

TEST_CASE("viz: token_label") {
  CHECK(token_label("hello") == "hello");
  CHECK(token_label(" the") == "\u2423the");
  CHECK(token_label("\n") == "\u21B5");
  CHECK(token_label("a\tb") == "a\\tb");
  CHECK(token_label(std::string("\x00\x01\x1f\x7f", 4)) == "\\x00\\x01\\x1F\\x7F");
  CHECK(token_label("\xff") == "\\xFF");
  CHECK(token_label("caf\xC3\xA9") == "caf\xC3\xA9");        // Latin: DejaVu has it
  CHECK(token_label("\xCE\xB1\xD0\xB6") == "\xCE\xB1\xD0\xB6");  // Greek alpha, Cyrillic zhe
  CHECK(token_label("\xC3") == "\\xC3");                        // half a character
  CHECK(token_label("\xE4\xB8\xAD") == "\\xE4\\xB8\\xAD");       // CJK: not in DejaVu Sans
  CHECK(token_label("\xE2\x80\x8B") == "\\xE2\\x80\\x8B");       // zero-width space
  CHECK(token_label("\xC2\xA0") == "\\xC2\\xA0");                // no-break space
  CHECK(token_label("\xE2\x90\xA3") == "\\xE2\\x90\\xA3");       // a literal ␣ stays distinct
  CHECK(token_label("") == "");
}

TEST_CASE("viz: sanitize_text and text_width") {
  CHECK(sanitize_text("a\x01z") == "a\\x01z");
  CHECK(sanitize_text("ok \xC3\xA9") == "ok \xC3\xA9");
  CHECK(sanitize_text("\xC3(") == "\\xC3(");
  CHECK(sanitize_text("\xC2\x85") == "\\xC2\\x85");  // C1 control NEL
  REQUIRE(font_available());
  float w1 = text_width("memory", 11), w2 = text_width("memory slot", 11);
  CHECK(w1 > 20);
  CHECK(w2 > w1);
  CHECK(text_width("memory", 22) == doctest::Approx(2 * w1).epsilon(0.01));
  CHECK(text_width("memory", 11, true) > w1);
  CHECK(text_width("", 11) == 0);
}

TEST_CASE("viz: font override - missing font falls back for metrics and fails rendering") {
  FontPathGuard guard;
  set_font_path("/nonexistent/dir/NoSuchFont.ttf");
  CHECK(font_path() == "/nonexistent/dir/NoSuchFont.ttf");
  CHECK_FALSE(font_available());
  CHECK(text_width("abcd", 10) == doctest::Approx(24));
  Figure f;
  f.width = 50;
  f.height = 20;
  Text t;
  t.x = 2;
  t.y = 15;
  t.text = "hi";
  f.prims.emplace_back(t);
  CHECK_THROWS_AS(render_rgba(f, 1, nullptr, nullptr), ExportError);
  set_font_path("");
  CHECK(font_available());
  int w = 0, h = 0;
  CHECK_NOTHROW(render_rgba(f, 1, &w, &h));
}

TEST_CASE("viz: heatmap PNG size, colours and text") {
  TempDir dir;
  HeatmapSpec spec = small_heatmap(6, 10);
  Figure fig = make_heatmap(spec);
  REQUIRE(cells_of(fig).size() == 60);
  const std::string path = dir.file("heat.png");
  write_png(fig, path, 2.0f);
  int w = 0, h = 0;
  std::vector<uint8_t> px = read_png_rgba(path, &w, &h);
  CHECK(w == static_cast<int>(std::ceil(fig.width * 2)));
  CHECK(h == static_cast<int>(std::ceil(fig.height * 2)));
  CHECK(fig.width == std::floor(fig.width));  // whole px, so 2x is exact
  CHECK(fig.height == std::floor(fig.height));

  std::set<uint32_t> colours;
  for (size_t i = 0; i < px.size(); i += 4)
    colours.insert((uint32_t(px[i]) << 16) | (uint32_t(px[i + 1]) << 8) | px[i + 2]);
  CHECK(colours.size() > 60);

  // Each cell centre has exactly the colormap colour of its value.
  std::vector<const Rect*> cells = cells_of(fig);
  for (size_t k = 0; k < cells.size(); ++k) {
    const Rect* c = cells[k];
    Rgb got = pixel(px, w, static_cast<int>((c->x + c->w / 2) * 2), static_cast<int>((c->y + c->h / 2) * 2));
    CHECK(got == sample(Colormap::Viridis, spec.values[k]));
  }
  // Text: the title band (above the cells) and the row-label band (left of the cells)
  // contain dark anti-aliased glyph pixels.
  auto dark_pixels = [&](int x0, int y0, int x1, int y1) {
    int n = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        Rgb p = pixel(px, w, x, y);
        if (p.r < 90 && p.g < 90 && p.b < 90) ++n;
      }
    return n;
  };
  float map_x = cells.front()->x, map_y = cells.front()->y;
  CHECK(dark_pixels(0, 0, w, static_cast<int>(map_y * 2) - 12) > 200);
  CHECK(dark_pixels(0, static_cast<int>(map_y * 2), static_cast<int>(map_x * 2) - 2, h) > 200);
  // Anti-aliasing: intermediate grey levels exist in the title band.
  int greys = 0;
  for (int y = 0; y < static_cast<int>(map_y * 2) - 12; ++y)
    for (int x = 0; x < w; ++x) {
      Rgb p = pixel(px, w, x, y);
      if (p.r > 90 && p.r < 200) ++greys;
    }
  CHECK(greys > 20);
}

TEST_CASE("viz: heatmap NaN / Inf cells use the marker colour") {
  for (Colormap m : {Colormap::Viridis, Colormap::Magma}) {
    HeatmapSpec spec = small_heatmap(4, 5);
    spec.cmap = m;
    spec.values[7] = NAN;
    spec.values[12] = INFINITY;
    spec.values[13] = -INFINITY;
    Figure fig = make_heatmap(spec);
    std::vector<const Rect*> cells = cells_of(fig);
    REQUIRE(cells.size() == 20);
    int w = 0, h = 0;
    std::vector<uint8_t> px = render_rgba(fig, 2.0f, &w, &h);
    for (int k : {7, 12, 13}) {
      const Rect* c = cells[k];
      CHECK(pixel(px, w, static_cast<int>((c->x + c->w / 2) * 2), static_cast<int>((c->y + c->h / 2) * 2)) ==
            nan_color(m));
    }
    const Rect* ok = cells[8];
    CHECK(pixel(px, w, static_cast<int>((ok->x + ok->w / 2) * 2), static_cast<int>((ok->y + ok->h / 2) * 2)) !=
          nan_color(m));
    bool legend = false;
    for (const auto& p : fig.prims)
      if (const Text* t = std::get_if<Text>(&p)) legend = legend || t->text == "NaN/Inf";
    CHECK(legend);
  }
}

TEST_CASE("viz: diverging heatmap centres its auto range on zero") {
  HeatmapSpec spec;
  spec.rows = 1;
  spec.cols = 3;
  spec.values = {-1.0f, 0.0f, 3.0f};
  spec.cmap = Colormap::Diverging;
  Figure fig = make_heatmap(spec);
  std::vector<const Rect*> cells = cells_of(fig);
  REQUIRE(cells.size() == 3);
  CHECK(*cells[1]->fill == sample(Colormap::Diverging, 0.5f));
  CHECK(*cells[2]->fill == sample(Colormap::Diverging, 1.0f));
  CHECK(*cells[0]->fill == sample(Colormap::Diverging, 1.0f / 3));
}

TEST_CASE("viz: SVG is well-formed, counts cells and escapes text") {
  TempDir dir;
  HeatmapSpec spec = small_heatmap(7, 9);
  spec.title = "a < b & c > \"d\" 'e'";
  spec.row_labels[0] = "<script>";
  spec.col_labels[1] = std::string("ctl\x01\x02\x1b", 6);
  spec.col_labels[2] = "bad \xff utf8";
  spec.col_separators = {1};
  spec.row_separators = {3};
  spec.col_groups = {{0, "self"}, {1, "tokens & more"}};
  spec.highlight_row = 2;
  spec.values[4] = NAN;
  Figure fig = make_heatmap(spec);
  const std::string path = dir.file("heat.svg");
  write_svg(fig, path);
  std::string svg = read_file(path);
  CHECK(svg == to_svg(fig));
  CHECK(xml_problem(svg) == "");
  CHECK(count_occurrences(svg, "class=\"cell\"") == 63);
  CHECK(svg.find("a &lt; b &amp; c &gt; &quot;d&quot; &apos;e&apos;") != std::string::npos);
  CHECK(svg.find("&lt;script&gt;") != std::string::npos);
  CHECK(svg.find("<script>") == std::string::npos);
  CHECK(svg.find("ctl\\x01\\x02\\x1B") != std::string::npos);
  CHECK(svg.find("bad \\xFF utf8") != std::string::npos);
  CHECK(svg.find("font-family=\"DejaVu Sans") != std::string::npos);
  for (unsigned char c : svg) CHECK_FALSE((c < 0x20 && c != '\n'));
  // The checker itself rejects broken documents.
  CHECK(xml_problem("<svg><text>a < b</text></svg>") != "");
  CHECK(xml_problem("<svg><g></svg>") != "");
  CHECK(xml_problem("<svg><text>a & b</text></svg>") != "");
}

TEST_CASE("viz: heatmap label legibility and layout") {
  // Many narrow columns: labels thinned, never smaller than 9 px, all inside the figure.
  HeatmapSpec spec = small_heatmap(20, 400);
  Figure fig = make_heatmap(spec);
  size_t col_labels = 0;
  for (const auto& p : fig.prims) {
    if (const Text* t = std::get_if<Text>(&p)) {
      CHECK(t->size >= 9.0f);
      CHECK(t->x >= 0);
      CHECK(t->x <= fig.width);
      CHECK(t->y >= 0);
      CHECK(t->y <= fig.height);
      if (t->text.size() > 1 && t->text[0] == 't' && std::isdigit(static_cast<unsigned char>(t->text[1]))) ++col_labels;
    }
  }
  CHECK(col_labels > 10);
  CHECK(col_labels < 400);
  CHECK(fig.width <= 2400);
  // Big maps shrink to stay within ~2400 px.
  HeatmapSpec big;
  big.rows = 300;
  big.cols = 3000;
  big.values.assign(300 * 3000, 0.5f);
  Figure bf = make_heatmap(big);
  CHECK(bf.width <= 2400);
  CHECK(bf.height <= 2400);
}

TEST_CASE("viz: rotated text renders bottom-to-top") {
  auto bbox = [](int rotation) {
    Figure f;
    f.width = 200;
    f.height = 200;
    Text t;
    t.x = 100;
    t.y = 100;
    t.text = "Rotation test";
    t.size = 14;
    t.rotation = rotation;
    f.prims.emplace_back(t);
    int w = 0, h = 0;
    std::vector<uint8_t> px = render_rgba(f, 2.0f, &w, &h);
    int x0 = w, y0 = h, x1 = -1, y1 = -1;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        if (pixel(px, w, x, y).r < 128) {
          x0 = std::min(x0, x);
          x1 = std::max(x1, x);
          y0 = std::min(y0, y);
          y1 = std::max(y1, y);
        }
    return std::vector<int>{x0, y0, x1, y1};
  };
  std::vector<int> flat = bbox(0), up = bbox(-90);
  REQUIRE(flat[2] > flat[0]);
  REQUIRE(up[2] > up[0]);
  CHECK(flat[2] - flat[0] > 3 * (flat[3] - flat[1]));  // wide
  CHECK(up[3] - up[1] > 3 * (up[2] - up[0]));          // tall
  // Start anchor: horizontal text starts at x, rotated text starts at y and goes up;
  // glyphs sit left of the (vertical) baseline.
  CHECK(std::abs(flat[0] - 200) < 6);
  CHECK(up[3] <= 200 + 2);
  CHECK(up[3] >= 200 - 6);
  CHECK(up[2] <= 200 + 8);  // descent only to the right of the baseline
  CHECK(up[0] < 200 - 10);
}

TEST_CASE("viz: bars, lines and histogram") {
  BarSpec b;
  b.title = "Slot usage";
  b.labels = {"slot 0", "slot 1", "slot 2"};
  b.values = {0.2f, NAN, 0.5f};
  b.reference_line = 1.0f / 3;
  Figure bf = make_bars(b);
  int w = 0, h = 0;
  std::vector<uint8_t> px = render_rgba(bf, 2.0f, &w, &h);
  CHECK(w == static_cast<int>(bf.width * 2));
  size_t bar_px = 0;
  for (size_t i = 0; i < px.size(); i += 4)
    if (Rgb{px[i], px[i + 1], px[i + 2]} == Rgb{76, 114, 176}) ++bar_px;
  CHECK(bar_px > 1000);
  bool dashed = false, nan_label = false;
  for (const auto& p : bf.prims) {
    if (const Line* l = std::get_if<Line>(&p)) dashed = dashed || l->dashed;
    if (const Text* t = std::get_if<Text>(&p)) nan_label = nan_label || t->text == "nan";
  }
  CHECK(dashed);
  CHECK(nan_label);
  b.horizontal = true;
  CHECK(make_bars(b).prims.size() > 10);

  // Lines: a NaN point becomes a red 'x' marker; without it there is no such red.
  auto red_pixels = [](const Figure& f) {
    int ww = 0, hh = 0;
    std::vector<uint8_t> p = render_rgba(f, 2.0f, &ww, &hh);
    size_t n = 0;
    for (size_t i = 0; i < p.size(); i += 4)
      if (p[i] > 200 && p[i + 1] < 60 && p[i + 2] < 60) ++n;
    return n;
  };
  LineSpec ls;
  ls.title = "loss";
  ls.series.push_back({"train", {0, 1, 2, 3, 4}, {3, 2, 1.5f, 1.2f, 1}, {31, 119, 180}});
  CHECK(red_pixels(make_lines(ls)) == 0);
  ls.series[0].y[2] = NAN;
  CHECK(red_pixels(make_lines(ls)) > 20);
  ls.log_y = true;
  CHECK_NOTHROW(make_lines(ls));
  ls.log_y = false;

  // Markers: a dashed vertical line spanning the plot at the marker's x, its label at the top;
  // a marker beyond the data widens the x range; a non-finite x is rejected by name.
  auto marker_lines = [](const Figure& f) {
    std::vector<Line> v;
    for (const auto& p : f.prims)
      if (const Line* l = std::get_if<Line>(&p))
        if (l->dashed && l->x0 == l->x1 && l->y1 - l->y0 > 300) v.push_back(*l);
    return v;
  };
  auto has_text = [](const Figure& f, const std::string& s) {
    for (const auto& p : f.prims)
      if (const Text* t = std::get_if<Text>(&p))
        if (t->text == s) return true;
    return false;
  };
  ls.series[0].y[2] = 1.5f;
  CHECK(marker_lines(make_lines(ls)).empty());
  ls.markers = {{2.f, "2\u21923 segments"}};
  Figure mf = make_lines(ls);
  auto ml = marker_lines(mf);
  REQUIRE(ml.size() == 1);
  CHECK(has_text(mf, "2\u21923 segments"));
  // x = 2 of 0..4 lies in the middle of the plot: halfway between the two x = 0 / x = 4 ticks.
  float x_lo = 1e9f, x_hi = -1e9f;
  for (const auto& p : mf.prims)
    if (const Line* l = std::get_if<Line>(&p))
      if (!l->dashed && l->x0 == l->x1) x_lo = std::min(x_lo, l->x0), x_hi = std::max(x_hi, l->x0);
  CHECK(ml[0].x0 == doctest::Approx((x_lo + x_hi) / 2).epsilon(0.01));
  ls.markers = {{8.f, "later"}};
  Figure wide = make_lines(ls);
  REQUIRE(marker_lines(wide).size() == 1);
  CHECK(marker_lines(wide)[0].x0 > ml[0].x0 + 100);
  ls.markers = {{NAN, "bad"}};
  CHECK(expect_invalid([&] { make_lines(ls); }).find("LineSpec.markers") != std::string::npos);
  ls.markers.clear();

  HistogramSpec hs;
  hs.samples = {0.1f, 0.2f, 0.2f, 0.9f, NAN, 5.0f};
  hs.bins = 4;
  hs.lo = 0;
  hs.hi = 1;
  Figure hf = make_histogram(hs);
  bool note = false;
  for (const auto& p : hf.prims)
    if (const Text* t = std::get_if<Text>(&p))
      note = note || t->text == "n = 4 (not counted: 1 non-finite, 1 outside the range)";
  CHECK(note);
}

TEST_CASE("viz: invalid specs are rejected naming the field") {
  HeatmapSpec s = small_heatmap(3, 4);
  s.values.pop_back();
  CHECK(expect_invalid([&] { make_heatmap(s); }).find("HeatmapSpec.values") != std::string::npos);
  s = small_heatmap(3, 4);
  s.row_labels.pop_back();
  CHECK(expect_invalid([&] { make_heatmap(s); }).find("HeatmapSpec.row_labels") != std::string::npos);
  s = small_heatmap(3, 4);
  s.col_labels.push_back("extra");
  CHECK(expect_invalid([&] { make_heatmap(s); }).find("HeatmapSpec.col_labels") != std::string::npos);
  s = small_heatmap(3, 4);
  s.rows = 0;
  CHECK(expect_invalid([&] { make_heatmap(s); }).find("HeatmapSpec.rows") != std::string::npos);
  s = small_heatmap(3, 4);
  s.col_separators = {9};
  CHECK(expect_invalid([&] { make_heatmap(s); }).find("HeatmapSpec.col_separators") != std::string::npos);
  s = small_heatmap(3, 4);
  s.highlight_row = 3;
  CHECK(expect_invalid([&] { make_heatmap(s); }).find("HeatmapSpec.highlight_row") != std::string::npos);
  s = small_heatmap(3, 4);
  s.vmin = 1;
  s.vmax = 0;
  CHECK(expect_invalid([&] { make_heatmap(s); }).find("HeatmapSpec.vmin") != std::string::npos);

  BarSpec b;
  b.values = {1, 2};
  b.labels = {"one"};
  CHECK(expect_invalid([&] { make_bars(b); }).find("BarSpec.labels") != std::string::npos);
  b.labels.clear();
  b.colors = {Rgb{}, Rgb{}, Rgb{}};
  CHECK(expect_invalid([&] { make_bars(b); }).find("BarSpec.colors") != std::string::npos);
  LineSpec l;
  l.series.push_back({"a", {1, 2, 3}, {1, 2}, {}});
  CHECK(expect_invalid([&] { make_lines(l); }).find("LineSpec.series[0].x") != std::string::npos);
  HistogramSpec hs;
  hs.bins = 0;
  CHECK(expect_invalid([&] { make_histogram(hs); }).find("HistogramSpec.bins") != std::string::npos);
  CHECK(expect_invalid([&] { write_csv_matrix("/tmp/x.csv", 2, 2, {1, 2, 3}, {}, {}); })
            .find("values") != std::string::npos);
}

TEST_CASE("viz: CSV quoting round-trips tricky labels") {
  TempDir dir;
  std::vector<std::string> rows = {"plain", "comma, inside", "quote \"q\"", "new\nline"};
  std::vector<std::string> cols = {" lead", "a,b", "\"", "x\r\ny"};
  std::vector<float> values;
  for (int i = 0; i < 16; ++i) values.push_back(i * 0.1f);
  values[5] = NAN;
  values[6] = -INFINITY;
  const std::string path = dir.file("m.csv");
  write_csv_matrix(path, 4, 4, values, rows, cols);
  auto parsed = parse_csv(read_file(path));
  REQUIRE(parsed.size() == 5);
  CHECK(parsed[0] == std::vector<std::string>{"", " lead", "a,b", "\"", "x\r\ny"});
  for (int r = 0; r < 4; ++r) {
    REQUIRE(parsed[r + 1].size() == 5);
    CHECK(parsed[r + 1][0] == rows[r]);
    for (int c = 0; c < 4; ++c) {
      const std::string& f = parsed[r + 1][c + 1];
      float v = values[r * 4 + c];
      if (std::isnan(v)) CHECK(f == "nan");
      else if (std::isinf(v)) CHECK(f == "-inf");
      else CHECK(std::stof(f) == v);  // 9 significant digits round-trip floats
    }
  }
  CHECK(csv_field("simple") == "simple");
  CHECK(csv_field("a\"b") == "\"a\"\"b\"");

  const std::string tpath = dir.file("t.csv");
  write_csv_table(tpath, {"name", "value"}, {{"x,y", "1"}, {"say \"hi\"", "2"}});
  auto t = parse_csv(read_file(tpath));
  REQUIRE(t.size() == 3);
  CHECK(t[1] == std::vector<std::string>{"x,y", "1"});
  CHECK(t[2] == std::vector<std::string>{"say \"hi\"", "2"});
  CHECK_THROWS_AS(write_csv_table(tpath, {"a", "b"}, {{"only one"}}), std::invalid_argument);
  // Writes leave no temp files behind.
  CHECK(dir.listing() == std::vector<std::string>{"m.csv", "t.csv"});
}

TEST_CASE("viz: writing into a missing directory throws ExportError and leaves nothing") {
  TempDir dir;
  const std::string missing = dir.file("no_such_dir");
  Figure fig = make_heatmap(small_heatmap(2, 2));
  auto check_error = [&](const std::function<void(const std::string&)>& write, const std::string& name) {
    const std::string path = missing + "/" + name;
    bool thrown = false;
    try {
      write(path);
    } catch (const ExportError& e) {
      thrown = true;
      CHECK(std::string(e.what()).find(path) != std::string::npos);
      CHECK(std::string(e.what()).find("does not exist") != std::string::npos);
      CHECK(e.path() == path);
    }
    CHECK(thrown);
    CHECK(dir.listing().empty());
  };
  check_error([&](const std::string& p) { write_png(fig, p); }, "a.png");
  check_error([&](const std::string& p) { write_svg(fig, p); }, "a.svg");
  check_error([&](const std::string& p) { write_csv_matrix(p, 1, 1, {1.0f}, {}, {}); }, "a.csv");
  check_error([&](const std::string& p) { write_csv_table(p, {"h"}, {{"v"}}); }, "b.csv");

  // A failed write keeps the old file intact: writing over a directory fails cleanly.
  const std::string keep = dir.file("keep.svg");
  write_svg(fig, keep);
  std::string before = read_file(keep);
  fs::create_directory(dir.path / "adir");
  CHECK_THROWS_AS(write_svg(fig, dir.file("adir")), ExportError);
  CHECK(read_file(keep) == before);
  CHECK(dir.listing() == std::vector<std::string>{"adir", "keep.svg"});
}

TEST_CASE("viz: 1024x512 heatmap exports quickly") {
  TempDir dir;
  HeatmapSpec spec;
  spec.rows = 512;
  spec.cols = 1024;
  spec.title = "big";
  spec.values.resize(512 * 1024);
  for (size_t i = 0; i < spec.values.size(); ++i) spec.values[i] = std::sin(i * 0.001f);
  for (int c = 0; c < 1024; ++c) spec.col_labels.push_back(std::to_string(c));
  auto t0 = std::chrono::steady_clock::now();
  Figure fig = make_heatmap(spec);
  write_png(fig, dir.file("big.png"));
  auto t1 = std::chrono::steady_clock::now();
  write_svg(fig, dir.file("big.svg"));
  auto t2 = std::chrono::steady_clock::now();
  double png_s = std::chrono::duration<double>(t1 - t0).count();
  double svg_s = std::chrono::duration<double>(t2 - t1).count();
  MESSAGE("1024x512 heatmap: PNG " << png_s << " s, SVG " << svg_s << " s");
  CHECK(png_s < 6.0);
  CHECK(svg_s < 6.0);
  std::string svg = read_file(dir.file("big.svg"));
  CHECK(count_occurrences(svg, "class=\"cell\"") == 512u * 1024u);
  int w = 0, h = 0;
  read_png_rgba(dir.file("big.png"), &w, &h);
  CHECK(w == static_cast<int>(fig.width * 2));
  CHECK(h == static_cast<int>(fig.height * 2));
}

TEST_CASE("viz: a thinned heatmap axis says which labels it shows, and byte tokens stay whole where they fit upright") {
  auto texts = [](const Figure& f) {
    std::vector<std::string> out;
    for (const auto& p : f.prims)
      if (const Text* t = std::get_if<Text>(&p)) out.push_back(t->text);
    return out;
  };
  auto count_prefix = [](const std::vector<std::string>& v, char first) {
    size_t n = 0;
    for (const auto& s : v)
      if (s.size() > 1 && s[0] == first && std::isdigit(static_cast<unsigned char>(s[1]))) ++n;
    return n;
  };
  CHECK(ordinal(1) == "1st");
  CHECK(ordinal(2) == "2nd");
  CHECK(ordinal(3) == "3rd");
  CHECK(ordinal(4) == "4th");
  CHECK(ordinal(11) == "11th");
  CHECK(ordinal(12) == "12th");
  CHECK(ordinal(22) == "22nd");
  CHECK(thinning_note(1).empty());
  CHECK(with_thinning_note("key", 1) == "key");
  CHECK(with_thinning_note("key", 5) == "key  (every 5th label shown)");
  CHECK(with_thinning_note("", 2) == "every 2nd label shown");

  // 4 px cells: labels (9 px at least, 1.15 em apart) fit every 3rd cell, on both axes; the
  // axis labels say so, and that many labels are drawn (plus the last column's).
  HeatmapSpec thin = small_heatmap(60, 60);
  for (auto& l : thin.row_labels) l = "r" + l.substr(5);
  thin.cell = 4;
  const std::vector<std::string> tt = texts(make_heatmap(thin));
  CHECK(std::count(tt.begin(), tt.end(), "key  (every 3rd label shown)") == 1);
  CHECK(std::count(tt.begin(), tt.end(), "slot  (every 3rd label shown)") == 1);
  CHECK(count_prefix(tt, 't') == 20);  // columns 0, 3, .., 54 and the last one, 59
  CHECK(count_prefix(tt, 'r') == 20);  // rows 0, 3, .., 57
  // Wide cells: every label, and the axis labels as given.
  HeatmapSpec wide = small_heatmap(6, 10);
  const std::vector<std::string> wt = texts(make_heatmap(wide));
  CHECK(std::count(wt.begin(), wt.end(), "key") == 1);
  CHECK(count_prefix(wt, 't') == 10);

  // "eror of Brazil" as bytes in 10 px cells: each one-character label fits upright at a
  // smaller size, so every byte is labelled (not "e r o ␣ r z l"), no note needed.
  const std::string text = "eror of Brazil";
  HeatmapSpec bytes;
  bytes.x_label = "key";
  bytes.rows = 2;
  bytes.cols = static_cast<int>(text.size());
  bytes.values.assign(2 * text.size(), 0.5f);
  for (char ch : text) bytes.col_labels.push_back(token_label(std::string(1, ch)));
  bytes.cell = 10;
  const Figure bf = make_heatmap(bytes);
  std::string shown;
  for (const auto& p : bf.prims)
    if (const Text* t = std::get_if<Text>(&p))
      if (std::find(bytes.col_labels.begin(), bytes.col_labels.end(), t->text) != bytes.col_labels.end()) {
        CHECK(t->size >= 9.0f);
        CHECK(t->rotation == 0);
        shown += t->text;
      }
  std::string expected;
  for (const auto& l : bytes.col_labels) expected += l;
  CHECK(shown == expected);
  const std::vector<std::string> bt = texts(bf);
  CHECK(std::count(bt.begin(), bt.end(), "key") == 1);
}

TEST_CASE("viz: a line series with the same points as an earlier one stays visible and its legend says same as") {
  // "valid" and "valid, memory zeroed" of a model whose memory does nothing: one line would
  // hide the other exactly and its legend entry would name a curve nobody can see.
  LineSpec ls;
  ls.title = "loss";
  LineSeries valid{"valid", {}, {}, {31, 119, 180}};
  for (int i = 0; i < 200; ++i) {
    valid.x.push_back(static_cast<float>(i));
    valid.y.push_back(3.f - 0.01f * static_cast<float>(i));
  }
  LineSeries zeroed = valid;
  zeroed.name = "valid, memory zeroed";
  zeroed.color = {255, 127, 14};
  LineSeries train = valid;
  train.name = "train";
  train.color = {44, 160, 44};
  train.y[100] += 0.5f;  // differs at one point: a line of its own
  ls.series = {valid, train, zeroed};
  CHECK(coinciding_series(ls) == std::vector<int>{-1, -1, 0});
  const Figure f = make_lines(ls);
  size_t texts_same = 0, orange_marks = 0, orange_lines = 0, green_lines = 0;
  for (const auto& p : f.prims) {
    if (const Text* t = std::get_if<Text>(&p)) texts_same += t->text == "valid, memory zeroed (same as valid)";
    if (const Rect* r = std::get_if<Rect>(&p))
      orange_marks += r->fill && r->fill->r == 255 && r->fill->g == 127 && r->fill->b == 14;
    if (const Line* l = std::get_if<Line>(&p)) {
      orange_lines += l->color.r == 255 && l->color.g == 127 && l->color.b == 14;
      green_lines += l->color.r == 44 && l->color.g == 160 && l->color.b == 44;
    }
  }
  CHECK(texts_same == 1);
  // Marks >= 14 px apart over a 520 px plot (and one in the legend), no orange line but the legend's.
  CHECK(orange_marks >= 30);
  CHECK(orange_marks <= 45);
  CHECK(orange_lines == 1);
  CHECK(green_lines > 100);
  // Rendered, the orange shows over the blue line.
  int ww = 0, hh = 0;
  std::vector<uint8_t> px = render_rgba(f, 1.0f, &ww, &hh);
  size_t orange = 0;
  for (size_t i = 0; i < px.size(); i += 4) orange += px[i] > 230 && px[i + 1] > 100 && px[i + 1] < 150 && px[i + 2] < 40;
  CHECK(orange > 300);
  // NaN matches NaN, a value 1e-6 relative apart still counts as the same, more does not.
  LineSpec n;
  n.series = {{"a", {0, 1}, {NAN, 2.f}}, {"b", {0, 1}, {NAN, 2.f * (1 + 5e-7f)}}, {"c", {0, 1}, {NAN, 2.01f}}};
  CHECK(coinciding_series(n) == std::vector<int>{-1, 0, -1});
}
