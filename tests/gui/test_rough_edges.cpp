// The rough edges a new user hit in the app, each tried again: the segment count the
// Controls panel states, bytes that are not UTF-8 in the Document panel and the notice for a
// file that is not text, the window title, and short curves drawn as bare lines.
// (LibTorch and core headers before doctest: glog's CHECK clashes with doctest's.)
#ifdef MNEMO_WITH_GUI
#include "app/commands/gui.h"
#include "app/figures/figures.h"
#include "app/view/published_view.h"
#include "app/gui/model/synthetic.h"
#include "app/gui/panels/panels.h"
#include "app/gui/panels/widgets/heatmap.h"
#include "app/gui/panels/widgets/widgets.h"
#include "viz/charts.h"
#endif
#include "tests/support/helpers.h"
#ifdef MNEMO_WITH_GUI
#include "tests/support/null_imgui.h"
#endif

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <unistd.h>

#ifdef MNEMO_WITH_GUI
using namespace mnemo;
using namespace mnemo::app;

TEST_CASE("gui: the position counts segments as the Document panel and the CLI do") {
  // 262 segments are 0..261: "segment 4 of 262", never "of 261".
  CHECK(position_text(4, 262) == "segment 4 of 262 (0..261)");
  CHECK(position_text(0, 1) == "segment 0 of 1 (0..0)");
}

TEST_CASE("gui: the Document panel escapes bytes that are not UTF-8 as \\xHH - a file that is not text gets a notice") {
  const std::string bytes = std::string("caf\xC3\xA9 d\xE9j\xE0 ") + '\x01' + "\n";
  Document doc = make_document(bytes, "latin1.txt");
  CHECK(DocumentPanel::cell_text(doc, 0) == "c");
  CHECK(DocumentPanel::cell_text(doc, 3) == "\xC3\xA9");  // valid UTF-8: the character itself
  CHECK(DocumentPanel::cell_text(doc, 7) == "\\xE9");     // a Latin-1 byte: escaped, not "·"
  CHECK(DocumentPanel::cell_text(doc, 9) == "\\xE0");
  CHECK(DocumentPanel::cell_text(doc, 11) == "\\x01");    // a control byte
  ViewSource info;
  info.doc = std::make_shared<const Document>(doc);
  info.not_text = doc.looks_binary();
  CHECK(info.not_text);
  CHECK(DocumentPanel::notice(info).find("not UTF-8 text") != std::string::npos);
  Document text = make_document("plain text\n", "t.txt");
  info.not_text = text.looks_binary();
  CHECK(DocumentPanel::notice(info).empty());
}

TEST_CASE("gui: line starts follow every newline but a final one, in memory and across a mapped document's chunks") {
  CHECK(line_starts_of(make_document("ab\ncd\n\nef\n")) == std::vector<uint32_t>{0, 3, 6, 7});
  CHECK(line_starts_of(make_document("no newline")) == std::vector<uint32_t>{0});
  const std::string dir = test::temp_dir("gui-lines");
  std::string bytes(static_cast<size_t>(Document::kScanChunk) + 100, 'x');
  bytes[static_cast<size_t>(Document::kScanChunk) - 1] = '\n';  // last byte of the first chunk
  bytes[static_cast<size_t>(Document::kScanChunk)] = '\n';      // first byte of the second
  bytes[5] = '\n';
  test::write_file(dir + "/lines.txt", bytes);
  const Document doc = load_document(dir + "/lines.txt");
  REQUIRE(doc.mapped());
  const auto k = static_cast<uint32_t>(Document::kScanChunk);
  CHECK(line_starts_of(doc) == std::vector<uint32_t>{0, 6, k, k + 1});
}

TEST_CASE("gui: a large document cut short on disk while open gets a red line naming it, and reads 0 past the cut") {
  const std::string dir = test::temp_dir("gui-changed");
  const std::string p = dir + "/big.txt";
  test::write_file(p, std::string(static_cast<size_t>(kMapMinBytes) * 2, 'x'));
  const Document doc = load_document(p);
  REQUIRE(doc.mapped());
  CHECK(DocumentPanel::changed_notice(doc).empty());
  REQUIRE(::truncate(p.c_str(), 10) == 0);
  CHECK(DocumentPanel::cell_text(doc, kMapMinBytes) == "\\x00");  // past the cut: a zero byte, no crash
  CHECK(DocumentPanel::cell_text(doc, 3) == "x");
  const std::string note = DocumentPanel::changed_notice(doc);
  CHECK(note.find("'" + p + "' changed on disk since it was opened") != std::string::npos);
  CHECK(note.find("Open it again") != std::string::npos);
}

TEST_CASE("gui: the window title names the document and model, and a replay's session, not its trace file") {
  PublishedView live;
  auto info = std::make_shared<ViewSource>();
  info->doc = std::make_shared<const Document>(make_document("x", "/home/u/texts/moby.txt"));
  info->cfg.model = "rmt";
  live.info = info;
  CHECK(window_title(live) == "Mnemoscope \xE2\x80\x94 moby.txt \xE2\x80\x94 rmt (random weights)");
  info->checkpoint = "/zoo/rmt-text.safetensors";
  CHECK(window_title(live) == "Mnemoscope \xE2\x80\x94 moby.txt \xE2\x80\x94 rmt");
  PublishedView replay = live;
  auto rinfo = std::make_shared<ViewSource>(*info);
  rinfo->doc = std::make_shared<const Document>(make_document("x", "/runs/copy/traces/step-000000300.safetensors"));
  replay.info = rinfo;
  replay.session_dir = "/runs/copy/";
  const std::string t = window_title(replay);
  CHECK(t.find("session /runs/copy") != std::string::npos);
  CHECK(t.find("step-000000300") == std::string::npos);
  CHECK(t.find("safetensors") == std::string::npos);
  CHECK(window_title(PublishedView{}) == "Mnemoscope");
  // The menu bar's status names the same: the document for a live model, the session and the
  // recording's training step for a replay - never the trace file.
  live.position = 4;
  info->num_segments = 6;
  CHECK(status_text(live) == "moby.txt  |  segment 4 of 6 (0..5)");
  rinfo->checkpoint = "recorded at training step 300";
  rinfo->num_segments = 2;
  replay.position = -1;
  CHECK(status_text(replay) == "session copy, probe recorded at training step 300  |  not stepped yet");
  CHECK(status_text(PublishedView{}).empty());
}

TEST_CASE("gui: the selection line wraps at spaces only - a weight such as (0.474) is never split after its point") {
  // One unit per character: the widths are the characters counted.
  auto chars = [](const std::string& t) { return static_cast<float>(t.size()); };
  const std::string line = "drew on the slots: most on slot 11 (0.474), slot 24 (0.211), slot 12 (0.149)";
  for (float w = 8.f; w <= 80.f; w += 1.f) {
    CAPTURE(w);
    const auto lines = ui::wrap_at_spaces(line, w, chars);
    std::string joined;
    for (const auto& l : lines) {
      CHECK(!l.empty());
      CHECK((chars(l) <= w || l.find(' ') == std::string::npos));  // only a lone word may overflow
      CHECK(l.back() != '.');                                       // never "(0." at a line's end
      joined += (joined.empty() ? "" : " ") + l;
    }
    CHECK(joined == line);  // nothing lost, spaces only where they were
  }
  CHECK(ui::wrap_at_spaces("a bb ccc", 4.f, chars) == std::vector<std::string>{"a bb", "ccc"});
  CHECK(ui::wrap_at_spaces("  a  b ", 10.f, chars) == std::vector<std::string>{"a b"});  // runs of spaces fold
  CHECK(ui::wrap_at_spaces("", 10.f, chars) == std::vector<std::string>{""});
  CHECK(ui::wrap_at_spaces("longword x", 3.f, chars) == std::vector<std::string>{"longword", "x"});
}

TEST_CASE("viz: a thinned column axis keeps the first and the last label (the writer map's self and last token)") {
  viz::HeatmapSpec h;
  h.rows = 2;
  h.cols = 203;
  h.values.assign(static_cast<size_t>(h.rows * h.cols), 0.5f);
  for (int c = 0; c < h.cols; ++c) h.col_labels.push_back(c == 0 ? "self" : "t" + std::to_string(c));
  h.cell = 3.f;
  const viz::Figure f = viz::make_heatmap(h);
  bool self = false, last = false;
  int shown = 0;
  for (const auto& p : f.prims)
    if (const auto* t = std::get_if<viz::Text>(&p)) {
      self = self || t->text == "self";
      last = last || t->text == "t202";
      shown += t->text.size() > 1 && t->text[0] == 't' && t->text[1] >= '0' && t->text[1] <= '9';
    }
  CHECK(self);
  CHECK(last);
  CHECK(shown < h.cols - 1);  // thinned
}

TEST_CASE("viz: a short curve marks its points (a few probe recordings are not a bare line)") {
  auto count_marks = [](const viz::Figure& f) {
    int n = 0;
    for (const auto& p : f.prims)
      if (const auto* r = std::get_if<viz::Rect>(&p))
        if (r->w == 5.f && r->h == 5.f && r->fill && *r->fill == viz::Rgb{200, 10, 10}) ++n;
    return n;
  };
  viz::LineSpec s;
  s.title = "probe loss";
  s.series.push_back({"probe", {0.f, 100.f, 200.f, 300.f}, {3.f, 2.f, 1.5f, 1.f}, viz::Rgb{200, 10, 10}});
  CHECK(count_marks(viz::make_lines(s)) == 4);
  // A long series stays a line.
  viz::LineSpec l;
  l.series.push_back({"train", {}, std::vector<float>(500, 1.f), viz::Rgb{200, 10, 10}});
  for (size_t i = 0; i < 500; ++i) l.series[0].y[i] = 1.f + 0.001f * static_cast<float>(i);
  CHECK(count_marks(viz::make_lines(l)) == 0);
}
TEST_CASE("gui: the demo opens at segment 1 of the zoo model's episode with slot 0 followed, not on empty panels") {
  std::ostringstream log;
  GuiOptions o = demo_gui_options(log);
  CAPTURE(log.str());
  const std::string zoo = std::string(MNEMO_SOURCE_DIR) + "/assets/models/memformer-two-facts-ft";
  CHECK(o.checkpoint == zoo + ".safetensors");
  CHECK(o.doc == zoo + ".txt");
  // Two steps (segments 0 and 1: both facts written) and a slot selected: every panel has
  // something to draw, as in the README's first screenshot.
  CHECK(o.steps == 2);
  CHECK(o.select_slot == 0);
  CHECK_FALSE(o.quit);
  CHECK(log.str().find("demo: the trained zoo model") != std::string::npos);
}
TEST_CASE("gui: Controls gives the loss in nats/token and bits/byte, and says when it does not measure the model") {
  // bits/byte = nats / ln 2 (eval's unit; every token is a byte): 1.2 nats = 1.7312 bits.
  CHECK(loss_units_text(1.2) == "1.2000 nats/token = 1.7312 bits/byte");
  CHECK(loss_units_text(std::log(256.0)) == "5.5452 nats/token = 8.0000 bits/byte");
  // A trained text model with an ordinary loss: nothing to say.
  CHECK(loss_warning(1.2, "text", false).empty());
  CHECK(loss_warning(std::log(256.0), "text", false).empty());  // exactly uniform is not worse
  // mtn-qa stepped as a language model (5.63 nats/token through its untrained LM head).
  const std::string qa = loss_warning(5.63, "qa", false);
  CHECK(qa.find("trained on the qa task") != std::string::npos);
  CHECK(qa.find("never trained") != std::string::npos);
  CHECK(loss_warning(0.5, "qa", false).find("qa task") != std::string::npos);  // whatever the loss
  // A text model worse than a uniform guess.
  const std::string worse = loss_warning(5.63, "text", false);
  CHECK(worse.find("Worse than guessing: 5.6300 nats/token is above a uniform guess over the 256 byte values "
                   "(ln 256 = 5.5452 nats/token = 8 bits/byte)") == 0);
  // Not for a synthetic task (a copy's random symbols) or random weights: said elsewhere.
  CHECK(loss_warning(6.2, "copy", false).empty());
  CHECK(loss_warning(6.0, "", true).empty());
}
TEST_CASE("gui: a heatmap whose labels are thinned says so under the map") {
  CHECK(ui::heatmap_axis_title("key", 1, 1) == "key");
  CHECK(ui::heatmap_axis_title("", 1, 1).empty());
  CHECK(ui::heatmap_axis_title("key", 2, 1) == "key  (every 2nd column labelled; hover a cell for each)");
  CHECK(ui::heatmap_axis_title("", 1, 5) == "every 5th row labelled; hover a cell for each");
  CHECK(ui::heatmap_axis_title("", 2, 10) == "every 2nd column, 10th row labelled; hover a cell for each");
}
TEST_CASE("gui: a narrow heatmap's thinning note is the longest whole form that fits, never cut") {
  const auto w7 = [](const std::string& s) { return 7.f * static_cast<float>(s.size()); };  // 7 px a character
  auto fit = [&](const std::string& t, int c, int r, float w) { return ui::heatmap_axis_title_fit(t, c, r, w, w7); };
  const std::string full = "every 2nd column, 10th row labelled; hover a cell for each";
  CHECK(fit("", 2, 10, 7.f * static_cast<float>(full.size())) == full);
  CHECK(fit("", 2, 10, 7.f * static_cast<float>(full.size()) - 1.f) == "every 2nd column, 10th row labelled");
  CHECK(fit("", 2, 10, 240.f) == "labels: every 2nd col, 10th row");
  CHECK(fit("", 2, 10, 200.f) == "every 2nd col, 10th row");
  CHECK(fit("", 2, 10, 20.f) == "every 2nd col, 10th row");  // the shortest when none fits
  CHECK(fit("key", 2, 1, 1000.f) == "key  (every 2nd column labelled; hover a cell for each)");
  CHECK(fit("key", 2, 1, 7.f * 32.f) == "key  (every 2nd column labelled)");
  CHECK(fit("key", 2, 1, 7.f * 31.f) == "labels: every 2nd col");
  CHECK(fit("key", 1, 1, 5.f) == "key");  // nothing thinned: the title as it is
  for (float w : {100.f, 180.f, 260.f, 400.f}) CHECK(w7(fit("predicted token", 3, 4, w)) <= std::max(w, w7("every 3rd col, 4th row")));
}
TEST_CASE("gui: the Slot types panel in a short window keeps both strip rows a line tall - type and self labelled - "
          "without scrolling") {
  SyntheticSpec spec;
  spec.slots = 16;
  ViewPtr v = make_synthetic_view(spec);
  ViewModel vm;
  vm.set_step(v->step->memformer.slots, v->step->memformer.self_mass);
  ui::NullTextureApi textures;
  RecordingController control;
  Transport transport;
  ShellRequests requests;
  try {
    test::NullImGui ui(1280.f, 720.f);
    // Heights from a presenter stop's short panel to a full one: the strip's rows are each at
    // least a text line (+1 px) tall, so the heatmap labels both ("type", "self") unthinned.
    for (float h : {150.f, 170.f, 190.f, 230.f, 320.f}) {
      CAPTURE(h);
      SlotTypesPanel panel;
      float line_h = 0.f, scroll_max = -1.f;
      for (int f = 0; f < 3; ++f)
        ui.frame([&] {
          ImGui::SetNextWindowPos(ImVec2(0, 0));
          ImGui::SetNextWindowSize(ImVec2(420, h));
          ImGui::Begin("Slot types");
          PanelContext ctx{*v, vm, textures, control, transport, requests};
          panel.draw(ctx);
          line_h = ImGui::GetTextLineHeight();
          scroll_max = ImGui::GetScrollMaxY();
          ImGui::End();
        });
      const float row_h = 0.5f * (panel.strip_max().y - panel.strip_min().y);
      CHECK(row_h >= line_h + 1.f);
      if (h >= 170.f) CHECK(scroll_max == 0.f);
    }
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}
TEST_CASE("gui: the writer map's axis keeps the segment's first and last token labels beside self and <cls>, never touching") {
  // 1 self + 64 tokens + 1 cls at 9 px per cell: "self" (28 px) and "<cls>" (35 px) cannot fit
  // beside the first and last token (8 px); the tokens win (the groups above name self and cls).
  const int cols = 66;
  auto width = [](int c) { return c == 0 ? 28.f : c == 65 ? 35.f : 8.f; };
  // The writer panel's axes (app/gui/panels/writer_attention.cpp): tokens first, then self and <cls>.
  std::vector<std::string> labels(cols, "t");
  ui::HeatmapAxes axes;
  axes.col_labels = &labels;
  axes.always_label_cols = {1, 64};
  const std::vector<int> priority = ui::col_label_priority(axes, cols);
  CHECK(priority == std::vector<int>{1, 64, 0, 65});
  axes.highlight_col = 7;
  CHECK(ui::col_label_priority(axes, cols) == std::vector<int>{7, 1, 64, 0, 65});
  const float gap = 4.f;
  auto placed = ui::place_col_labels(cols, width, 100.f, 9.f, 60.f, 100.f + 9.f * cols, priority, 2, gap);
  std::set<int> cols_placed;
  for (const auto& l : placed) cols_placed.insert(l.col);
  CHECK(cols_placed.count(1) == 1);
  CHECK(cols_placed.count(64) == 1);
  for (size_t i = 0; i < placed.size(); ++i)
    for (size_t j = i + 1; j < placed.size(); ++j) {
      const auto& a = placed[i];
      const auto& b = placed[j];
      CAPTURE(a.col);
      CAPTURE(b.col);
      CHECK((a.x + a.w + gap <= b.x || b.x + b.w + gap <= a.x));  // a gap, never touching
    }
  // Every label within the widget, centred under its cell where it fits.
  for (const auto& l : placed) {
    CHECK(l.x >= 60.f);
    CHECK(l.x + l.w <= 100.f + 9.f * cols);
  }
  // Wide cells: all four named columns.
  auto wide = ui::place_col_labels(cols, width, 100.f, 40.f, 60.f, 100.f + 40.f * cols, priority, 1, gap);
  std::set<int> all;
  for (const auto& l : wide) all.insert(l.col);
  for (int c : {0, 1, 64, 65}) CHECK(all.count(c) == 1);
  CHECK(wide.size() == static_cast<size_t>(cols));
}
TEST_CASE("gui: column group captions above a narrow map never run together - shortened or left out, never touching") {
  // A narrow writer map: "self" (1 column), "segment tokens" (13), "cls" (1) over 15 columns of
  // a few px, 7 px a character: the captions ran together ("selfsegment tokencls").
  auto width = [](const std::string& t) {
    float n = 0.f;
    for (unsigned char c : t) n += (c & 0xC0) == 0x80 ? 0.f : 1.f;  // one a code point
    return 7.f * n;
  };
  auto spans_at = [](float cw) {
    const float x0 = 100.f, origin = 60.f;
    const float right = x0 + cw * 15.f + 40.f;  // the colour bar's margin
    std::vector<ui::GroupSpan> s(3);
    s[0] = {x0, x0 + cw, origin, x0 + cw, "self"};
    s[1] = {x0 + cw, x0 + cw * 14.f, x0 + cw, x0 + cw * 14.f, "segment tokens"};
    s[2] = {x0 + cw * 14.f, x0 + cw * 15.f, x0 + cw * 14.f, right, "cls"};
    return s;
  };
  const float gap = 4.f;
  for (const float cw : {0.5f, 1.f, 2.f, 3.f, 6.f, 9.f, 20.f}) {
    CAPTURE(cw);
    const auto spans = spans_at(cw);
    const auto placed = ui::place_group_labels(spans, width, gap);
    for (size_t i = 0; i < placed.size(); ++i) {
      const auto& g = placed[i];
      const auto& s = spans[static_cast<size_t>(g.group)];
      CAPTURE(g.text);
      CHECK(g.w == doctest::Approx(width(g.text)));
      CHECK(g.x >= s.lo - 1e-3f);  // within its room
      CHECK(g.x + g.w <= s.hi + 1e-3f);
      // The caption itself, or its beginning and an ellipsis.
      const bool whole = g.text == s.text;
      const bool shortened = g.text.size() > 3 && g.text.compare(g.text.size() - 3, 3, "\xE2\x80\xA6") == 0 &&
                             s.text.compare(0, g.text.size() - 3, g.text, 0, g.text.size() - 3) == 0;
      CHECK((whole || shortened));
      if (i > 0) CHECK(placed[i - 1].x + placed[i - 1].w + gap <= g.x + 1e-3f);  // a gap, never touching
    }
  }
  // Wide cells: every caption whole, centred on its span where it fits.
  const auto wide = ui::place_group_labels(spans_at(20.f), width, gap);
  REQUIRE(wide.size() == 3);
  CHECK(wide[1].text == "segment tokens");
  CHECK(wide[1].x + 0.5f * wide[1].w == doctest::Approx(100.f + 20.f * 7.5f));
  CHECK(wide[2].text == "cls");
  // 6 px cells: the middle caption (74 px of room after "self") is shortened, cls keeps its margin.
  const auto narrow = ui::place_group_labels(spans_at(6.f), width, gap);
  REQUIRE(narrow.size() == 3);
  CHECK(narrow[0].text == "self");
  CHECK(narrow[1].text == "segment t\xE2\x80\xA6");
  CHECK(narrow[2].text == "cls");
  // Half-pixel cells: no room between "self" and "cls" for even "s" and the ellipsis: left out.
  const auto tiny = ui::place_group_labels(spans_at(0.5f), width, gap);
  for (const auto& g : tiny) CHECK(g.group != 1);
}
#endif
