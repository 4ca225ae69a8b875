// What a panel needs to draw on its own in the null backend (tests/support/null_imgui.h): a
// texture API that makes no textures, a view model, a controller that records the commands it is
// given, the transport and the shell's requests. context(view) hands them to Panel::draw.
#pragma once
#include "app/gui/model/controller.h"
#include "app/gui/panels/panels.h"
#include "app/gui/panels/widgets/texture.h"
#include "app/view/published_view.h"

namespace mnemo::test {

struct PanelHarness {
  app::ui::NullTextureApi textures;
  app::ViewModel vm;
  app::RecordingController control;
  app::Transport transport;
  app::ShellRequests requests;
  app::PanelContext context(const app::PublishedView& view) { return {view, vm, textures, control, transport, requests}; }
};

}  // namespace mnemo::test
