// The training dashboard panel: live curves of a session being trained (or finished) —
// loss / perplexity / accuracy for train and valid, learning rate, gradient norm, tokens/s,
// peak memory, and the memory diagnostics of the probe recordings (slot types, forgetting
// norms, RMT block masses, bucket entropy) — a recording selector for the map panels, a
// second session overlaid dashed, and the Train section (start / pause / checkpoint / stop a
// run, edit its config). The data lives in DashboardModel (app/gui/model/dashboard.h);
// curves draw at most two points per pixel column (widgets/curves.h).
#pragma once
#include "app/gui/model/dashboard.h"
#include "app/gui/panels/panels.h"
#include "app/gui/panels/widgets/curves.h"

#include <map>
#include <string>

namespace mnemo::app {

class DashboardPanel : public Panel {
 public:
  DashboardModel& model() { return model_; }
  const DashboardModel& model() const { return model_; }
  void draw(PanelContext& ctx) override;

 private:
  void draw_header(PanelContext& ctx);
  void draw_recordings(PanelContext& ctx);
  void draw_training(PanelContext& ctx);

  DashboardModel model_;
  std::map<std::string, ui::CurveView> views_;
  double next_poll_ = 0;
  char compare_buf_[512] = {0};
  char train_out_[512] = {0};
};

}  // namespace mnemo::app
