// Colormaps for heatmaps and colorbars (no dependencies beyond the standard library).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mnemo::viz {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

inline bool operator==(Rgb a, Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }
inline bool operator!=(Rgb a, Rgb b) { return !(a == b); }

enum class Colormap {
  Viridis,    // dark purple -> blue -> green -> yellow (matplotlib's viridis)
  Magma,      // black -> purple -> orange -> pale yellow (matplotlib's magma)
  Diverging,  // blue -> near-white -> red (ColorBrewer RdBu, reversed); centre t = 0.5
  Gray,       // black -> white
};

// Marker colours for values that cannot be placed on a colormap.
// kNanColor (magenta) is the default; nan_color() picks, per map, a colour the map itself
// never produces (magenta for Viridis/Diverging/Gray, bright green for Magma, whose
// purples and pinks sit too close to magenta).
inline constexpr Rgb kNanColor{255, 0, 255};
inline constexpr Rgb kNanColorMagma{0, 230, 64};

// sample(): colour at position t of the map. t is clamped to [0,1] (so -inf -> 0, +inf -> 1);
// NaN gives nan_color(map). Colours are linear interpolations between tabulated anchors
// (sRGB, 8 bit), so sample(map, 0) and sample(map, 1) are exactly the end anchors.
Rgb sample(Colormap map, float t);
Rgb nan_color(Colormap map);

// colormap_name(): lower-case name ("viridis", "magma", "diverging", "gray").
// parse_colormap(): inverse of colormap_name, case-insensitive; also accepts the aliases
// "rdbu", "coolwarm", "bwr" (-> Diverging) and "grey"/"greys" (-> Gray). nullopt if unknown.
const char* colormap_name(Colormap map);
std::optional<Colormap> parse_colormap(std::string_view name);

}  // namespace mnemo::viz
