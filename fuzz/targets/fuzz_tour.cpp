// Tour files (app/gui/model/tour.h) on any text, through the same parser the app and
// `mnemoscope tour` use, with a small in-memory zoo instead of files on disk: the text is
// rejected with a TourError naming the file (and the stop and field when it gets that far),
// or every stop it returns is playable — its segment inside its document, its panels known,
// its selection in range, a caption — and the caption parses.
#include "app/gui/model/tour.h"
#include "fuzz/targets/common.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

namespace {

using namespace mnemo;
using namespace mnemo::app;

const TourSources& sources() {
  static const TourSources src = [] {
    TourSources s;
    const char* names[] = {"memformer-copy", "memformer-copy-unit", "rmt-copy"};
    for (const char* n : names) {
      ZooModel z;
      z.name = n;
      z.path = std::string("zoo/") + n + ".safetensors";
      z.document = std::string("zoo/") + n + ".txt";
      s.zoo.push_back(z);
    }
    static const std::map<std::string, std::string> docs = {
        {"zoo/memformer-copy.txt", ">bdjaghce.QKZMRTWP.LXBNVFSY.HDEUCOAJ?bdjaghce"},
        {"zoo/memformer-copy-unit.txt", ">bdjaghce.QKZMRTWP.LXBNVFSY.HDEUCOAJ?bdjaghce"},
        {"zoo/rmt-copy.txt", "gefeicbieehhgefeic>gefeicbieehhgefeic"},
        {"text.txt", "a short document"},
        {"empty.txt", ""}};
    s.file_exists = [](const std::string& p) {
      return docs.count(p) || p.rfind("zoo/", 0) == 0 || p == "weights.safetensors";
    };
    s.read_model_config = [](const std::string& p) {
      ModelConfig c;
      if (p.find("rmt") != std::string::npos) {
        c.model = "rmt";
        c.segment_len = 37;
      } else if (p == "weights.safetensors") {
        c.slots = 4;
        c.segment_len = 3;
      } else if (p.rfind("zoo/", 0) == 0) {
        c.slots = 8;
        c.segment_len = 9;
      } else {
        throw InputError("cannot be read: no such weights file");
      }
      c.validate();
      return c;
    };
    s.load_document = [](const std::string& p) {
      const auto it = docs.find(p);
      if (it == docs.end()) throw DocumentError("document '" + p + "' does not exist");
      Document d;
      d.path = p;
      d.bytes = it->second;
      return d;
    };
    return s;
  }();
  return src;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)parse_caption(text);  // any text is a caption
  Tour t;
  try {
    t = parse_tour(text, "tours/t.json", sources());
  } catch (const TourError& e) {
    FUZZ_REQUIRE(std::string(e.what()).rfind("tour tours/t.json", 0) == 0);
    return 0;
  }
  FUZZ_REQUIRE(!t.stops.empty());
  const auto& panels = tour_panel_names();
  for (const auto& s : t.stops) {
    FUZZ_REQUIRE(s.segment >= 0 && s.segment < s.num_segments);
    FUZZ_REQUIRE(!s.panels.empty());
    for (const auto& p : s.panels) FUZZ_REQUIRE(std::find(panels.begin(), panels.end(), p) != panels.end());
    FUZZ_REQUIRE(s.select.slot >= -1 && s.select.slot < s.cfg.slots);
    FUZZ_REQUIRE(s.select.head >= -1 && s.select.head < s.cfg.heads);
    FUZZ_REQUIRE(!s.caption.empty());
    (void)parse_caption(s.caption);
  }
  return 0;
}
