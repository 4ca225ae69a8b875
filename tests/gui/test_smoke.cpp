// Checks the screenshot that tests/gui/gui_smoke.sh takes of the real program under Xvfb
// (ctest: gui_smoke_xvfb). Run alone it has nothing to check and reports skipped (exit 77).
#include "tests/support/helpers.h"
#include "tests/support/skip.h"

#include <doctest/doctest.h>

#include "viz/export.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

TEST_CASE("gui smoke: screenshot of the app has the window's size and shows the panels") {
  const char* png = std::getenv("MNEMO_SMOKE_PNG");
  const char* size = std::getenv("MNEMO_SMOKE_SIZE");
  if (!png || !size) {
    MNEMO_SKIP("no screenshot to check: tests/gui/gui_smoke.sh (ctest gui_smoke_xvfb) runs this case with one");
    return;
  }
  int want_w = 0, want_h = 0;
  REQUIRE(std::sscanf(size, "%dx%d", &want_w, &want_h) == 2);
  int w = 0, h = 0;
  std::vector<uint8_t> px;
  REQUIRE_NOTHROW(px = mnemo::viz::read_png_rgba(png, &w, &h));
  CHECK(w == want_w);
  CHECK(h == want_h);
  // Not blank: many distinct colours (heatmaps, text), and no single colour covers it.
  std::set<uint32_t> colours;
  std::map<uint32_t, int64_t> count;
  for (size_t i = 0; i + 3 < px.size(); i += 4 * 7) {
    const uint32_t c = (uint32_t{px[i]} << 16) | (uint32_t{px[i + 1]} << 8) | px[i + 2];
    colours.insert(c);
    ++count[c];
  }
  int64_t most = 0, total = 0;
  for (auto& [c, n] : count) {
    most = std::max(most, n);
    total += n;
  }
  CHECK(colours.size() > 200);
  // The window background may cover at most this share (MTN's layout has more empty panel
  // area than Memformer's, so the script passes a larger one for it).
  double max_share = 0.6;
  if (const char* m = std::getenv("MNEMO_SMOKE_MAX_SHARE")) max_share = std::atof(m);
  CHECK(static_cast<double>(most) / static_cast<double>(total) < max_share);
  // The writer-attention map (viridis) sits in the middle column near the top: its pixels
  // are saturated colours, not the dark window background.
  int saturated = 0;
  for (int y = h / 10; y < h / 2; y += 4)
    for (int x = w * 30 / 100; x < w * 68 / 100; x += 4) {
      const uint8_t* p = &px[(static_cast<size_t>(y) * w + x) * 4];
      const int mx = std::max({p[0], p[1], p[2]}), mn = std::min({p[0], p[1], p[2]});
      if (mx - mn > 60) ++saturated;
    }
  CHECK(saturated > 500);
}
