#include "app/gui/model/session.h"

#include <cmath>

namespace mnemo::app {

float SessionView::token_loss(int64_t t) const {
  return info ? app::token_loss(visited, info->segment_len, t) : NAN;
}

std::vector<int64_t> line_starts_of(const Document& doc) {
  std::vector<int64_t> starts{0};
  const int64_t n = doc.size();
  for (int64_t t = 0; t + 1 < n; ++t) {
    const auto& [b, e] = doc.offset(t);
    if (e - b == 1 && doc.bytes[static_cast<size_t>(b)] == '\n') starts.push_back(t + 1);
  }
  return starts;
}

}  // namespace mnemo::app
