// File > Open model...: the zoo catalog read from zoo files' headers, the picker's Open
// (model first, then the model's own document), and the popup drawn by the shell without
// asserting. (LibTorch and core headers before doctest: glog's CHECK clashes with doctest's.)
#include "app/gui/model/zoo_catalog.h"
#include "core/io/safetensors.h"
#include "core/train/zoo.h"
#ifdef MNEMO_WITH_GUI
#include "app/gui/shell/shell.h"
#endif
#include "tests/support/helpers.h"
#ifdef MNEMO_WITH_GUI
#include "tests/support/null_imgui.h"
#endif

#include <doctest/doctest.h>

#include <torch/torch.h>

using namespace mnemo;
using namespace mnemo::app;

namespace {

void write_zoo_file(const std::string& path, const std::string& name, const std::string& summary) {
  nlohmann::json cfg = {{"model", {{"model", "memformer"}}}, {"task", {{"name", "copy-recall"}}}};
  io::save_safetensors(path, {{"w", torch::zeros({2, 2})}},
                       {{"format", kZooFormat}, {"format_version", "1"}, {"name", name}, {"summary", summary},
                        {"card", "docs/zoo/" + name + ".md"}, {"config", cfg.dump()}, {"step", "123"}});
}

}  // namespace

TEST_CASE("zoo catalog: lists zoo files by name with summary, kind, task and the shipped document - skips the rest") {
  const std::string dir = test::temp_dir("zoo-catalog");
  write_zoo_file(dir + "/b-model.safetensors", "b-model", "second one");
  write_zoo_file(dir + "/a-model.safetensors", "a-model", "first one");
  test::write_file(dir + "/a-model.txt", ">abc.XYZ?abc");
  io::save_safetensors(dir + "/plain.safetensors", {{"w", torch::zeros({1})}}, {});  // not a zoo model
  test::write_file(dir + "/broken.safetensors", "not a safetensors file");
  auto zoo = zoo_catalog(dir);
  REQUIRE(zoo.size() == 2);
  CHECK(zoo[0].name == "a-model");
  CHECK(zoo[0].summary == "first one");
  CHECK(zoo[0].model_kind == "memformer");
  CHECK(zoo[0].task == "copy-recall");
  CHECK(zoo[0].step == 123);
  CHECK(zoo[0].document == dir + "/a-model.txt");
  CHECK(zoo[0].card == "docs/zoo/a-model.md");
  CHECK(zoo[1].name == "b-model");
  CHECK(zoo[1].document.empty());
  CHECK(zoo_catalog(dir + "/missing").empty());
  CHECK(zoo_catalog("").empty());
}

#ifdef MNEMO_WITH_GUI
TEST_CASE("model picker: Open applies the model from its file first, then opens its document - a typed path wins") {
  ModelPicker p;
  RecordingController control;
  p.reset();
  CHECK_FALSE(p.open_selected(control));  // an empty zoo and no path: nothing to open
  CHECK(control.calls == 0);
  ZooModel with_doc;
  with_doc.name = "m";
  with_doc.path = "/zoo/m.safetensors";
  with_doc.document = "/zoo/m.txt";
  ZooModel no_doc;
  no_doc.name = "n";
  no_doc.path = "/zoo/n.safetensors";
  p.set_zoo({with_doc, no_doc}, "/zoo");
  p.reset();
  REQUIRE(p.open_selected(control));
  CHECK(control.calls == 2);
  CHECK(control.last == "open /zoo/m.txt");
  p.select(1);
  REQUIRE(p.open_selected(control));
  CHECK(control.calls == 3);
  CHECK(control.last == "apply seed 0 checkpoint /zoo/n.safetensors");
  p.set_path("/runs/x/checkpoints/step-000000010.safetensors");
  REQUIRE(p.open_selected(control));
  CHECK(control.last == "apply seed 0 checkpoint /runs/x/checkpoints/step-000000010.safetensors");
  // "Keep the open document": the model only, its episode not opened.
  p.set_path("");
  p.select(0);
  p.set_keep_document(true);
  const int before = control.calls;
  REQUIRE(p.open_selected(control));
  CHECK(control.calls == before + 1);
  CHECK(control.last == "apply seed 0 checkpoint /zoo/m.safetensors");
}

TEST_CASE("model picker: the shell draws the popup over an empty view and with a zoo, without asserting") {
  ui::NullTextureApi textures;
  RecordingController control;
  try {
    test::NullImGui ui(1280.f, 720.f);
    Shell shell(&textures, ui.fonts, nullptr, nullptr);
    auto empty = std::make_shared<PublishedView>();
    shell.request_model_picker();
    for (int f = 0; f < 5; ++f) ui.frame(shell, empty, control);
    CHECK(shell.has_popup());
    ZooModel m;
    m.name = "memformer-copy";
    m.summary = "Memformer recalls 8 symbols across 3 distractor segments";
    m.path = "/zoo/memformer-copy.safetensors";
    shell.model_picker().set_zoo({m}, "/zoo");
    for (int f = 0; f < 5; ++f) {
      ImGui::GetIO().MousePos = ImVec2(640.f, 300.f + 10.f * static_cast<float>(f));
      ui.frame(shell, empty, control);
    }
    CHECK(shell.has_popup());
    CHECK(control.calls == 0);  // drawing and hovering never open a model
  } catch (const test::ImGuiAssertFailure& e) {
    ImGui::SetCurrentContext(nullptr);
    FAIL(e.what());
  }
}
#endif
