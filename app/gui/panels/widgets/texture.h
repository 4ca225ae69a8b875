// Textures for ImGui images, behind an interface so panels can be drawn with a real GPU
// (app/gui/platform/gl_textures.h) or with no renderer at all (NullTextureApi, for tests).
#pragma once
#include <imgui.h>

#include <cstdint>
#include <vector>

namespace mnemo::app::ui {

// RGBA8 textures addressed by ImTextureID. Pixels are row-major, top row first, 4 bytes
// each. create() needs 1 <= w, h <= max_size(); update() keeps the texture's size.
// destroy() accepts only ids from create(). Calls come from the thread that draws.
class TextureApi {
 public:
  virtual ~TextureApi() = default;
  virtual ImTextureID create(int w, int h, const uint8_t* rgba, bool smooth) = 0;
  virtual void update(ImTextureID id, int w, int h, const uint8_t* rgba) = 0;
  virtual void destroy(ImTextureID id) = 0;
  virtual int max_size() const = 0;
  // Counters for tests and the benchmark: pixel uploads (create + update) so far.
  int64_t uploads() const { return uploads_; }
  int64_t live() const { return live_; }

 protected:
  int64_t uploads_ = 0;
  int64_t live_ = 0;
};

// Allocates nothing: ids are counters, pixels are ignored (checked for size only).
class NullTextureApi : public TextureApi {
 public:
  explicit NullTextureApi(int max_size = 16384) : max_size_(max_size) {}
  ImTextureID create(int w, int h, const uint8_t* rgba, bool smooth) override;
  void update(ImTextureID id, int w, int h, const uint8_t* rgba) override;
  void destroy(ImTextureID id) override;
  int max_size() const override { return max_size_; }

 private:
  int max_size_;
  intptr_t next_ = 1;
};

// One texture owned by a panel: upload() creates it, re-creates it when the size changes,
// or updates it in place. Not copyable; destroys its texture on destruction.
class Texture {
 public:
  Texture() = default;
  explicit Texture(TextureApi* api) : api_(api) {}
  ~Texture();
  Texture(const Texture&) = delete;
  Texture& operator=(const Texture&) = delete;

  void set_api(TextureApi* api);
  void upload(int w, int h, const uint8_t* rgba, bool smooth = false);
  void reset();
  bool valid() const { return id_ != ImTextureID{}; }
  ImTextureID id() const { return id_; }
  int width() const { return w_; }
  int height() const { return h_; }
  TextureApi* api() const { return api_; }

 private:
  TextureApi* api_ = nullptr;
  ImTextureID id_{};
  int w_ = 0, h_ = 0;
  bool smooth_ = false;
};

}  // namespace mnemo::app::ui
