#include "app/figures/doc_text.h"

#include <string_view>

namespace mnemo::app {

std::string shown_token(const Document& doc, int64_t t) {
  const auto& [b, e] = doc.offset(t);
  std::string_view bytes(doc.bytes.data() + b, static_cast<size_t>(e - b));
  if (bytes == " ") return " ";
  return viz::token_label(bytes);
}

std::vector<std::vector<int64_t>> token_lines(const Document& doc, int64_t start, int64_t end, float size, float max_w) {
  auto is_newline = [&](int64_t t) {
    const auto& [b, e] = doc.offset(t);
    return e - b == 1 && doc.bytes[static_cast<size_t>(b)] == '\n';
  };
  std::vector<std::vector<int64_t>> lines(1);
  std::string text;  // the last line's text so far
  for (int64_t t = start; t < end; ++t) {
    auto& line = lines.back();
    line.push_back(t);
    text += shown_token(doc, t);
    if (is_newline(t)) {
      lines.emplace_back();
      text.clear();
      continue;
    }
    if (line.size() > 1 && viz::text_width(text, size) > max_w) {
      // Break after the last space of the line when there is one, else before this token.
      size_t cut = line.size() - 1;
      for (size_t i = line.size() - 1; i-- > 0;)
        if (shown_token(doc, line[i]) == " ") {
          cut = i + 1;
          break;
        }
      std::vector<int64_t> rest(line.begin() + static_cast<std::ptrdiff_t>(cut), line.end());
      line.resize(cut);
      text.clear();
      for (int64_t r : rest) text += shown_token(doc, r);
      lines.push_back(std::move(rest));
    }
  }
  if (lines.back().empty()) lines.pop_back();
  return lines;
}

std::pair<std::string, std::vector<float>> line_text(const Document& doc, const std::vector<int64_t>& line, float x0,
                                                     float size) {
  std::vector<float> xs(line.size() + 1);
  xs[0] = x0;
  std::string text;
  for (size_t i = 0; i < line.size(); ++i) {
    text += shown_token(doc, line[i]);
    xs[i + 1] = x0 + viz::text_width(text, size);
  }
  return {text, xs};
}

}  // namespace mnemo::app
