#include "app/gui/panels/widgets/texture.h"

#include <stdexcept>
#include <string>

namespace mnemo::app::ui {

namespace {
void check_size(int w, int h, int max_size) {
  if (w < 1 || h < 1 || w > max_size || h > max_size)
    throw std::invalid_argument("texture size " + std::to_string(w) + "x" + std::to_string(h) + " outside 1.." +
                                std::to_string(max_size));
}
}  // namespace

ImTextureID NullTextureApi::create(int w, int h, const uint8_t* rgba, bool) {
  check_size(w, h, max_size_);
  if (!rgba) throw std::invalid_argument("texture: no pixels");
  ++uploads_;
  ++live_;
  return reinterpret_cast<ImTextureID>(next_++);
}

void NullTextureApi::update(ImTextureID id, int w, int h, const uint8_t* rgba) {
  check_size(w, h, max_size_);
  if (!id || !rgba) throw std::invalid_argument("texture: update of no texture");
  ++uploads_;
}

void NullTextureApi::destroy(ImTextureID id) {
  if (id) --live_;
}

Texture::~Texture() { reset(); }

void Texture::set_api(TextureApi* api) {
  if (api == api_) return;
  reset();
  api_ = api;
}

void Texture::upload(int w, int h, const uint8_t* rgba, bool smooth) {
  if (!api_) return;
  if (valid() && w == w_ && h == h_ && smooth == smooth_) {
    api_->update(id_, w, h, rgba);
    return;
  }
  reset();
  id_ = api_->create(w, h, rgba, smooth);
  w_ = w;
  h_ = h;
  smooth_ = smooth;
}

void Texture::reset() {
  if (api_ && valid()) api_->destroy(id_);
  id_ = ImTextureID{};
  w_ = h_ = 0;
}

}  // namespace mnemo::app::ui
