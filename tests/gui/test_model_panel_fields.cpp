// The Model fields of the Controls panel against the config field table (docs/architecture.md,
// "Adding a config field"): the fields it shows are rows of ModelConfig::fields(), and the tooltip
// drawn over each is the help and range of its row in the schema (`mnemoscope info
// --config-schema`, docs/formats.md#config-schema), for every model kind. The tooltips are read
// back from what ImGui renders (its text log) while the pointer sweeps the panel in the null
// backend. Plain C++ and ImGui: no LibTorch.
#include "app/gui/model/model_fields.h"
#include "app/gui/panels/panels.h"
#include "app/gui/panels/widgets/texture.h"
#include "app/view/published_view.h"
#include "core/data/document.h"
#include "core/models/family.h"
#include "tests/support/null_imgui.h"
#include "tests/support/panel_harness.h"

#include <doctest/doctest.h>
#include <imgui.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

using namespace mnemo;
using namespace mnemo::app;

namespace {

// A schema row's bound as the tooltip writes it (0 -> "0", 100 -> "100", null -> "inf").
std::string schema_bound(const nlohmann::json& v, bool upper) {
  if (v.is_null()) return upper ? "inf" : "-inf";
  char b[40];
  std::snprintf(b, sizeof b, "%.10g", v.get<double>());
  return b;
}

// What the tooltip over a field should say, from its schema row alone: the help, then
// "; range LO..HI" (integers), "; range (LO, HI]" (reals, open or closed as the row says) or
// "; \"a\" or \"b\"" (strings with allowed values); the help alone otherwise.
std::string tip_from_schema(const nlohmann::json& row) {
  const std::string help = row.at("help").get<std::string>();
  const std::string kind = row.at("kind").get<std::string>();
  if (kind == "int") return help + "; range " + std::to_string(row.at("min").get<int64_t>()) + ".." +
                            std::to_string(row.at("max").get<int64_t>());
  if (kind == "real")
    return help + "; range " + (row.at("min_open").get<bool>() ? "(" : "[") + schema_bound(row.at("min"), false) + ", " +
           schema_bound(row.at("max"), true) + (row.at("max_open").get<bool>() ? ")" : "]");
  if (kind == "string" && row.contains("allowed")) {
    std::string list;
    const auto& a = row.at("allowed");
    for (size_t i = 0; i < a.size(); ++i)
      list += (i == 0 ? "" : i + 1 == a.size() ? " or " : ", ") + ("\"" + a[i].get<std::string>() + "\"");
    return help + "; " + list;
  }
  return help;
}

const nlohmann::json& schema_row(const nlohmann::json& schema, const std::string& name) {
  for (const auto& r : schema)
    if (r.at("name") == name) return r;
  FAIL("no schema row " << name);
  static const nlohmann::json none;
  return none;
}

}  // namespace

TEST_CASE("Model panel: its fields are the table's rows, each tooltip the schema row's help and range, for every kind") {
  const nlohmann::json schema = ModelConfig::fields().schema(ModelConfig{});
  for (const std::string& kind : ModelConfig::known_models()) {
    CAPTURE(kind);
    const auto controls = model_field_controls(kind);
    const bool enc_dec = capabilities_of(kind).architecture == Architecture::kEncoderDecoder;
    std::vector<std::string> names;
    for (const auto& c : controls) {
      REQUIRE(c.row);
      CAPTURE(c.row->name);
      names.push_back(c.row->name);
      CHECK(c.row == ModelConfig::fields().find(c.row->name));  // the table's own row: its member, range and help
      std::string label = c.row->name;
      for (char& ch : label) ch = ch == '_' ? ' ' : ch;
      CHECK(c.label == label);
      if (c.used) CHECK(c.tip == tip_from_schema(schema_row(schema, c.row->name)));
      else CHECK(c.tip.rfind("not used by " + kind, 0) == 0);
    }
    std::vector<std::string> want = {"slots", "segment_len", "heads", "dim", "layers"};
    if (enc_dec) want.insert(want.end(), {"dec_layers", "temperature", "forgetting"});
    CHECK(names == want);
  }
  // Which fields a kind leaves unused (greyed out, the tooltip says so).
  auto used = [](const std::string& kind, const std::string& name) {
    for (const auto& c : model_field_controls(kind))
      if (c.row->name == name) return c.used;
    FAIL("no field " << name << " for " << kind);
    return false;
  };
  CHECK(used("memformer", "slots"));
  CHECK(used("trxl", "slots"));  // the cache length while cache_len is -1
  CHECK_FALSE(used("transformer", "slots"));
  CHECK_FALSE(used("mtn", "layers"));
  CHECK(used("rmt", "layers"));
  // The tooltips say the ranges the checks use: one past the top of each shown integer field is
  // refused with that range, the top accepted.
  for (const auto& c : model_field_controls("memformer")) {
    if (c.row->kind != FieldKind::kInt) continue;
    CAPTURE(c.row->name);
    ModelConfig cfg;
    cfg.*c.row->int_member = c.row->hi + 1;
    try {
      cfg.validate();
      FAIL("accepted " << c.row->name << " = " << c.row->hi + 1);
    } catch (const ConfigError& e) {
      CHECK(e.field() == c.row->name);
      CHECK(std::string(e.what()).find("out of range " + range_text(*c.row)) != std::string::npos);
      CHECK(c.tip.find("range " + range_text(*c.row)) != std::string::npos);
    }
  }
  const auto* temperature = ModelConfig::fields().find("temperature");
  REQUIRE(temperature);
  ModelConfig zero;
  zero.temperature = 0.0;
  CHECK_THROWS_WITH_AS(zero.validate(), "config field 'temperature' = 0 is out of range (0, 100]", ConfigError);
  CHECK(field_tip(*temperature) == temperature->help + "; range (0, 100]");
}

TEST_CASE("Model panel: the tooltips it draws over its fields are the table's (hovered in the null backend)") {
  test::PanelHarness panel_harness;
  try {
    test::NullImGui ui(900.f, 1000.f);
    for (const std::string& kind : ModelConfig::known_models()) {
      CAPTURE(kind);
      auto info = std::make_shared<ViewSource>();
      info->id = 1;
      info->doc = std::make_shared<const Document>(make_document("a short document\n", "/tmp/doc.txt"));
      info->cfg.model = kind;
      info->segment_len = info->cfg.segment_len;
      info->num_segments = 1;
      PublishedView view;
      view.info = info;
      view.model_note = kind + ", randomly initialised (seed 0)";
      ControlsPanel panel;
      std::string seen;
      auto frame = [&](ImVec2 mouse) {
        seen += ui.logged_window("Controls", ImVec2(520, 1000), mouse, [&] {
          PanelContext ctx = panel_harness.context(view);
          panel.draw(ctx);
        }) + "\n";
      };
      frame(ImVec2(-100, -100));
      // The pointer sweeps the panel: every field is hovered in some frame, and its tooltip logged.
      for (float y = 4.f; y < 1000.f; y += 7.f)
        for (float x = 8.f; x < 520.f; x += 45.f) frame(ImVec2(x, y));
      const auto controls = model_field_controls(kind);
      REQUIRE(!controls.empty());
      for (const auto& c : controls) {
        CAPTURE(c.row->name);
        CAPTURE(c.tip);
        CHECK(seen.find(c.tip) != std::string::npos);
      }
      CHECK(panel_harness.control.calls == 0);  // hovering never commands the model
    }
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}

namespace {

// The log's lines from the first that starts with `first` to the next that contains `last`.
std::vector<std::string> lines_from_to(const std::vector<std::string>& lines, const std::string& first, const std::string& last) {
  std::vector<std::string> out;
  for (const auto& l : lines) {
    if (out.empty() && l.rfind(first, 0) != 0) continue;
    out.push_back(l);
    if (l.find(last) != std::string::npos) break;
  }
  return out;
}

}  // namespace

TEST_CASE("Controls panel: before the first step its status line and the model note wrap in a narrow column (nothing cut off)") {
  test::PanelHarness panel_harness;
  try {
    test::NullImGui ui(900.f, 1000.f);
    auto info = std::make_shared<ViewSource>();
    info->id = 1;
    info->doc = std::make_shared<const Document>(make_document("a short document\n", "/tmp/doc.txt"));
    info->cfg.model = "memformer";
    info->segment_len = info->cfg.segment_len;
    info->num_segments = 110;
    PublishedView view;
    view.info = info;
    const std::string path = "/home/someone/projects/mnemoscope/assets/models/memoryformer-lm.safetensors";
    view.model_note = "transformer, weights from " + path;
    ControlsPanel panel;
    float avail = 0.f;
    const std::string log = ui.logged_window("Controls", ImVec2(240, 1000), ImVec2(-100, -100), [&] {
      avail = ImGui::GetContentRegionAvail().x;
      PanelContext ctx = panel_harness.context(view);
      panel.draw(ctx);
    });
    CAPTURE(log);
    const auto logged = test::log_lines(log);
    // The status sentence: whole, over more than one line (the 240-px column cannot hold it on one).
    const auto status = lines_from_to(logged, "110 segments;", "Play.");
    std::string sentence;
    for (const auto& l : status) sentence += (sentence.empty() ? "" : " ") + l;
    CHECK(sentence == "110 segments; none stepped yet. Press Right or Play.");
    CHECK(status.size() >= 2);
    // The model note: wrapped at spaces, its path shortened from the left to the file name.
    const auto note = lines_from_to(logged, "transformer, weights", ".safetensors");
    REQUIRE(note.size() >= 2);
    CHECK(note.front() == "transformer, weights from");
    CHECK(note.back().size() < path.size());
    CHECK(note.back().find("memoryformer-lm.safetensors") != std::string::npos);
    ui.frame([&] {  // measured with the panel's font, inside a frame
      for (const auto* part : {&status, &note})
        for (const auto& l : *part) {
          CAPTURE(l);
          CHECK(ImGui::CalcTextSize(l.c_str()).x <= avail);
        }
    });
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}
