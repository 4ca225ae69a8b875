// OpenGL textures for ImGui images (the desktop app's TextureApi). Needs a current GL context
// on the calling thread for every call, including destruction of the textures it made.
#pragma once
#include "app/gui/panels/widgets/texture.h"

namespace mnemo::app {

class GlTextureApi : public ui::TextureApi {
 public:
  GlTextureApi();
  ImTextureID create(int w, int h, const uint8_t* rgba, bool smooth) override;
  void update(ImTextureID id, int w, int h, const uint8_t* rgba) override;
  void destroy(ImTextureID id) override;
  int max_size() const override { return max_size_; }

 private:
  int max_size_ = 4096;
};

}  // namespace mnemo::app
