// The document as word-wrapped text in a figure: the layout the figures that tint tokens
// share (MTN's kept tokens, the memory benefit).
#pragma once
#include "app/figures/figures.h"

#include <vector>

namespace mnemo::app {

// What a figure draws for token t: a space stays a space, other bytes as viz::token_label
// (a newline is drawn as ↵ and ends the line).
std::string shown_token(const Document& doc, int64_t t);

// Tokens [start, end) as lines no wider than max_w at font `size`: a newline token ends its
// line; a line too wide breaks after its last space (else before the token that overflows).
std::vector<std::vector<int64_t>> token_lines(const Document& doc, int64_t start, int64_t end, float size, float max_w);

// The text of `line` and the x of each token's left edge from x0 (one more entry: the right
// edge of the last token).
std::pair<std::string, std::vector<float>> line_text(const Document& doc, const std::vector<int64_t>& line, float x0,
                                                     float size);

}  // namespace mnemo::app
