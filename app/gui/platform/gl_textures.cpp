#include "app/gui/platform/gl_textures.h"

#include <GL/gl.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace mnemo::app {

namespace {
GLuint gl_id(ImTextureID id) { return static_cast<GLuint>(reinterpret_cast<intptr_t>(id)); }
}  // namespace

GlTextureApi::GlTextureApi() {
  GLint v = 0;
  glGetIntegerv(GL_MAX_TEXTURE_SIZE, &v);
  // Keep well inside what the driver allows: a heatmap wider than this is sampled down.
  max_size_ = std::max(1024, std::min<int>(v, 16384));
}

ImTextureID GlTextureApi::create(int w, int h, const uint8_t* rgba, bool smooth) {
  if (w < 1 || h < 1 || w > max_size_ || h > max_size_)
    throw std::invalid_argument("texture size " + std::to_string(w) + "x" + std::to_string(h) + " is not supported");
  GLint last = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &last);
  GLuint tex = 0;
  glGenTextures(1, &tex);
  glBindTexture(GL_TEXTURE_2D, tex);
  // Heatmap cells stay crisp (nearest); the colorbar is a smooth gradient.
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, smooth ? GL_LINEAR : GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, smooth ? GL_LINEAR : GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w, h, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(last));
  ++uploads_;
  ++live_;
  return reinterpret_cast<ImTextureID>(static_cast<intptr_t>(tex));
}

void GlTextureApi::update(ImTextureID id, int w, int h, const uint8_t* rgba) {
  GLint last = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &last);
  glBindTexture(GL_TEXTURE_2D, gl_id(id));
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(last));
  ++uploads_;
}

void GlTextureApi::destroy(ImTextureID id) {
  GLuint tex = gl_id(id);
  if (!tex) return;
  glDeleteTextures(1, &tex);
  --live_;
}

}  // namespace mnemo::app
