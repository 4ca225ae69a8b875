// The one palette of Mnemoscope's figures and panels: slot types, the three memory
// operations (RMT reading / writing / rewriting and their MTN and Transformer-XL
// counterparts), and the neutral inks. Panels convert to ImGui colours with
// ui::im_color (app/gui/panels/widgets/widgets.h).
#pragma once
#include "core/trace/slot_types.h"
#include "viz/colormap.h"

namespace mnemo::app::palette {

inline constexpr viz::Rgb kRetain{44, 123, 182};     // blue
inline constexpr viz::Rgb kMix{171, 171, 171};       // grey
inline constexpr viz::Rgb kOverwrite{215, 48, 39};   // red
inline constexpr viz::Rgb slot_type(SlotType t) {
  return t == SlotType::kRetain ? kRetain : (t == SlotType::kMix ? kMix : kOverwrite);
}

// Colour of block mass k (0 reading, 1 writing, 2 rewriting; cycles beyond).
inline constexpr viz::Rgb kMass[3] = {{44, 123, 182}, {215, 48, 39}, {253, 174, 97}};
inline constexpr viz::Rgb mass(int k) { return kMass[(k % 3 + 3) % 3]; }

// Series of line charts, in order (the dashboard's curves and exported curve figures).
inline constexpr viz::Rgb kSeries[10] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
                                         {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
                                         {188, 189, 34},  {23, 190, 207}};
inline constexpr viz::Rgb series(size_t i) { return kSeries[i % 10]; }

inline constexpr viz::Rgb kInk{25, 25, 25};
inline constexpr viz::Rgb kMuted{95, 95, 95};
inline constexpr viz::Rgb kBand{228, 228, 228};
inline constexpr viz::Rgb kOutline{0, 0, 0};

}  // namespace mnemo::app::palette
