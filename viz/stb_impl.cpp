// The single translation unit that compiles the stb implementations used by viz
// (PNG writing, TrueType rasterising and rectangle packing, PNG reading for tests and thumbnails).
// Nothing else may define the *_IMPLEMENTATION macros; libstb.so is not linked.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

// stb_rect_pack first: stb_truetype then uses its real API instead of a private fallback
// with a different stbrp_context layout. The GUI's ImGui (libimgui.a) packs its font atlas
// through these same stbtt_/stbrp_ symbols, so both must agree on that layout.
#define STB_RECT_PACK_IMPLEMENTATION
#include <stb_rect_pack.h>

#define STB_TRUETYPE_IMPLEMENTATION
#include <stb_truetype.h>

#define STBI_ONLY_PNG
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
