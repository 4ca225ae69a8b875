// Replays a session the way `mnemoscope gui --session DIR` does, with a null ImGui backend
// (no window, no GL): the app's ReplayController loads every recording and steps through
// every probe segment while the Shell draws the dashboard and the map panels. Prints, as
// JSON, what the app saw: the dashboard's curves, each recording's segments and attention
// maps, and every error the replay or the shell reported. The Python package's tests use it
// to check that a Python-written session replays in the app (python/tests/test_cross_language.py).
//
//   session_replay DIR [FRAMES_PER_SEGMENT]
// (LibTorch and core headers first, as in the app.)
#include "app/gui/model/replay.h"
#include "app/gui/shell/shell.h"
#include "core/io/session.h"
#include "app/gui/panels/widgets/assert.h"
#include "app/gui/panels/widgets/fonts.h"
#include "app/gui/panels/widgets/texture.h"

#include <imgui.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

using nlohmann::json;
using namespace mnemo;
using namespace mnemo::app;

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: session_replay DIR [FRAMES_PER_SEGMENT]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const int frames = argc == 3 ? std::max(1, std::atoi(argv[2])) : 3;
  json out;
  out["errors"] = json::array();
  try {
    app::ui::set_imgui_assert_handler([](const std::string& expr, const char* file, int line) {
      throw std::runtime_error("IM_ASSERT(" + expr + ") failed at " + file + ":" + std::to_string(line));
    });
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.LogFilename = nullptr;
    io.DisplaySize = ImVec2(1600.f, 900.f);
    io.DeltaTime = 1.f / 60.f;
    app::ui::UiFonts fonts = app::ui::load_fonts(15.f, 1.f);
    unsigned char* px = nullptr;
    int tw = 0, th = 0;
    io.Fonts->GetTexDataAsRGBA32(&px, &tw, &th);
    io.Fonts->SetTexID(reinterpret_cast<ImTextureID>(intptr_t{1}));
    app::ui::NullTextureApi textures;

    ReplayController replay(dir);
    Shell shell(&textures, fonts, nullptr, nullptr);
    shell.open_dashboard(dir, &replay);
    auto frame = [&] {
      ImGui::GetIO().DeltaTime = 1.f / 60.f;
      ImGui::NewFrame();
      shell.frame(replay.latest(), replay);
      ImGui::Render();
      if (!ImGui::GetDrawData() || !ImGui::GetDrawData()->Valid) throw std::runtime_error("no valid draw data");
    };
    for (int f = 0; f < frames; ++f) frame();

    const RunLog* log = shell.dashboard().model().run_log();
    json curves = json::object();
    if (log) {
      for (const auto& name : RunLog::curve_names()) {
        json cs = json::array();
        for (const auto& c : log->curves(name)) cs.push_back({{"name", c.name}, {"x", c.x}, {"y", c.y}});
        if (!cs.empty()) curves[name] = cs;
      }
      out["steps"] = log->steps.size();
      out["evals"] = log->evals.size();
      out["probes"] = log->probes.size();
    }
    out["curves"] = curves;
    out["shown_recording"] = replay.recording_step();
    out["model"] = replay.model_config().model;

    json recs = json::array();
    for (int64_t step : io::Session::open(dir, 3, io::SessionAccess::kReadOnly).trace_steps()) {
      json r = {{"step", step}};
      if (!replay.select_recording(step)) {
        r["ok"] = false;
        recs.push_back(r);
        continue;
      }
      r["ok"] = true;
      json segs = json::array();
      const int64_t n = replay.latest()->info->num_segments;
      for (int64_t i = 0; i < n; ++i) {
        replay.jump(i);
        for (int f = 0; f < frames; ++f) frame();
        const auto& v = replay.latest();
        const auto& a = v->step->attention;
        segs.push_back({{"position", v->position},
                        {"length", v->step->length},
                        {"loss", v->step->loss},
                        {"attention_kind", a.kind},
                        {"attention_layers", a.layers},
                        {"attention_heads", a.heads},
                        {"attention_rows", a.rows},
                        {"traced_mass", a.traced_mass},
                        {"mass", a.mass}});
      }
      r["segment_len"] = replay.latest()->info->segment_len;
      r["segments"] = segs;
      recs.push_back(r);
    }
    out["recordings"] = recs;
    for (const auto& e : replay.take_errors()) out["errors"].push_back(e);
    for (const auto& e : shell.pending_errors()) out["errors"].push_back(e);
    ImGui::DestroyContext();
  } catch (const std::exception& e) {
    out["errors"].push_back(std::string("exception: ") + e.what());
  }
  std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  return 0;
}
