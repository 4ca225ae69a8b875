#include "viz/colormap.h"

#include <cctype>
#include <cmath>
#include <string>

namespace mnemo::viz {
namespace {

struct ColorStop {
  float t;
  uint8_t r, g, b;
};

// Viridis: matplotlib's published viridis values at t = k/10 and k/8 (merged, sorted).
constexpr ColorStop kViridis[] = {
    {0.000f, 68, 1, 84},    {0.100f, 72, 37, 118},  {0.125f, 71, 44, 122},
    {0.200f, 65, 68, 135},  {0.250f, 59, 81, 139},  {0.300f, 53, 96, 141},
    {0.375f, 44, 113, 142}, {0.400f, 42, 120, 142}, {0.500f, 33, 145, 140},
    {0.600f, 34, 168, 132}, {0.625f, 39, 173, 129}, {0.700f, 67, 191, 113},
    {0.750f, 92, 200, 99},  {0.800f, 122, 209, 81}, {0.875f, 170, 220, 50},
    {0.900f, 187, 223, 39}, {1.000f, 253, 231, 37},
};

// Magma: matplotlib's published magma values at t = k/10.
constexpr ColorStop kMagma[] = {
    {0.0f, 0, 0, 4},       {0.1f, 20, 14, 54},    {0.2f, 59, 15, 112},
    {0.3f, 100, 26, 128},  {0.4f, 140, 41, 129},  {0.5f, 183, 55, 121},
    {0.6f, 222, 73, 104},  {0.7f, 247, 112, 92},  {0.8f, 254, 159, 109},
    {0.9f, 254, 207, 146}, {1.0f, 252, 253, 191},
};

// Diverging: ColorBrewer RdBu (11 classes) reversed so that low = blue, high = red.
constexpr ColorStop kDiverging[] = {
    {0.0f, 5, 48, 97},     {0.1f, 33, 102, 172},  {0.2f, 67, 147, 195},
    {0.3f, 146, 197, 222}, {0.4f, 209, 229, 240}, {0.5f, 247, 247, 247},
    {0.6f, 253, 219, 199}, {0.7f, 244, 165, 130}, {0.8f, 214, 96, 77},
    {0.9f, 178, 24, 43},   {1.0f, 103, 0, 31},
};

constexpr ColorStop kGray[] = {{0.0f, 0, 0, 0}, {1.0f, 255, 255, 255}};

template <size_t N>
Rgb interpolate(const ColorStop (&table)[N], float t) {
  if (t <= table[0].t) return {table[0].r, table[0].g, table[0].b};
  for (size_t i = 1; i < N; ++i) {
    if (t <= table[i].t) {
      const ColorStop& a = table[i - 1];
      const ColorStop& b = table[i];
      float f = (t - a.t) / (b.t - a.t);
      auto mix = [f](uint8_t x, uint8_t y) {
        return static_cast<uint8_t>(std::lround(x + (static_cast<float>(y) - x) * f));
      };
      return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
    }
  }
  return {table[N - 1].r, table[N - 1].g, table[N - 1].b};
}

}  // namespace

Rgb nan_color(Colormap map) { return map == Colormap::Magma ? kNanColorMagma : kNanColor; }

Rgb sample(Colormap map, float t) {
  if (std::isnan(t)) return nan_color(map);
  if (t < 0.0f) t = 0.0f;
  if (t > 1.0f) t = 1.0f;
  switch (map) {
    case Colormap::Viridis: return interpolate(kViridis, t);
    case Colormap::Magma: return interpolate(kMagma, t);
    case Colormap::Diverging: return interpolate(kDiverging, t);
    case Colormap::Gray: return interpolate(kGray, t);
  }
  return interpolate(kViridis, t);
}

const char* colormap_name(Colormap map) {
  switch (map) {
    case Colormap::Viridis: return "viridis";
    case Colormap::Magma: return "magma";
    case Colormap::Diverging: return "diverging";
    case Colormap::Gray: return "gray";
  }
  return "viridis";
}

std::optional<Colormap> parse_colormap(std::string_view name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "viridis") return Colormap::Viridis;
  if (lower == "magma") return Colormap::Magma;
  if (lower == "diverging" || lower == "rdbu" || lower == "coolwarm" || lower == "bwr")
    return Colormap::Diverging;
  if (lower == "gray" || lower == "grey" || lower == "greys") return Colormap::Gray;
  return std::nullopt;
}

}  // namespace mnemo::viz
