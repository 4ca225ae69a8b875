// Small ImGui helpers shared by the panels (drawing only; no application state).
#pragma once
#include "viz/colormap.h"

#include <imgui.h>

#include <functional>
#include <string>
#include <vector>

namespace mnemo::app::ui {

inline ImU32 im_color(viz::Rgb c, int alpha = 255) { return IM_COL32(c.r, c.g, c.b, alpha); }
inline ImVec4 im_color4(viz::Rgb c, float alpha = 1.f) { return ImVec4(c.r / 255.f, c.g / 255.f, c.b / 255.f, alpha); }

// A dimmed "(?)" that shows `text` as a tooltip when hovered (same line as the previous item).
void help_marker(const char* text);

// A horizontal bar filling `fraction` (clamped to [0,1]) of the available width, `height`
// px tall, with optional text drawn over it. Advances the layout like an item.
void inline_bar(float fraction, ImU32 color, float height, const char* overlay = nullptr);

// A colour scale's legend at the cursor: `cmap` from lo to hi, left to right, six font sizes wide
// and one high; an item of its own (IsItemHovered() after it gives its tooltip).
void colormap_strip(viz::Colormap cmap, float lo = 0.f, float hi = 1.f);

// A button that is drawn disabled (and returns false) when `enabled` is false.
bool button_enabled(const char* label, bool enabled, ImVec2 size = ImVec2(0, 0));

// Places the next item so that an item of `width` ends at the right edge of the content region
// (on the same line as the previous item when there is room).
void align_right(float width);

// Text of `s` shortened with a leading "…" so it fits `max_width` px.
std::string elide_left(const std::string& s, float max_width);

// Text of `s` shortened with a trailing "…" so it fits `max_width` px.
std::string elide_right(const std::string& s, float max_width);
// `text` on one line at the content region's width in `colour`: its first line, shortened with
// a trailing "…" when it does not fit; hovering it shows the whole text. Returns whether
// anything was left out of the line (a narrow side-by-side column).
bool text_one_line(const std::string& text, ImVec4 colour);

// `text` broken into lines at spaces only, each at most `width` wide as `measure` gives it (a
// word wider than that stands on a line of its own). ImGui's TextWrapped also breaks after
// '.' and ',', which splits a number such as "0.474" across two lines.
std::vector<std::string> wrap_at_spaces(const std::string& text, float width,
                                        const std::function<float(const std::string&)>& measure);
// wrap_at_spaces at the content region's width, drawn as one item (a group), so that
// IsItemHovered afterwards covers all of its lines.
void text_wrapped_at_spaces(const std::string& text);

}  // namespace mnemo::app::ui
