// Writers: Figure -> SVG / PNG, matrices and tables -> CSV.
#pragma once

#include "core/errors.h"
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "viz/figure.h"

namespace mnemo::viz {

// Thrown by every writer (and by render_rgba / read_png_rgba). what() names the path and
// the reason, e.g. "cannot write '/no/such/dir/a.png': directory '/no/such/dir' does not
// exist". path() is empty when no file is involved.
class ExportError : public mnemo::IoError {
 public:
  ExportError(const std::string& path, const std::string& reason);
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

// All file writers are atomic: they write "<dir>/.<name>.tmp-<token>" and rename it over
// `path`, so a failed write leaves neither a partial file nor the temp file behind; an
// existing file at `path` is replaced only on success. write_file_atomic is the shared
// primitive (usable by other modules).
void write_file_atomic(const std::string& path, std::string_view bytes);

// SVG: UTF-8 XML 1.0, one element per primitive in order; data cells are
// <rect class="cell" .../> (exactly one per Rect with cell = true); text is <text> with
// font-family DejaVu Sans, content passed through sanitize_text() and XML-escaped
// (& < > " '). Coordinates are rounded to 0.01 px. to_svg returns what write_svg writes.
std::string to_svg(const Figure& figure);
void write_svg(const Figure& figure, const std::string& path);

// Raster. render_rgba: RGBA8 pixels (opaque, row-major, top row first) of the figure at
// `scale` device px per figure px; *w = ceil(width * scale), *h = ceil(height * scale).
// Rect edges snap to whole pixels (no seams between cells); axis-aligned lines snap to whole
// pixels (crisp); other lines and all text are anti-aliased; text uses stb_truetype with
// kerning and supports rotation -90. Throws ExportError if the figure has text and no font
// can be loaded, if scale is not finite and > 0, or if the image would exceed 32768 px a
// side / 400 Mpx; throws std::invalid_argument for a Text rotation other than 0 / -90.
std::vector<uint8_t> render_rgba(const Figure& figure, float scale, int* w, int* h);
// write_png: render_rgba, then an 8-bit RGB PNG (default 2x for print).
void write_png(const Figure& figure, const std::string& path, float scale = 2.0f);
// read_png_rgba: decodes any PNG to RGBA8 (for tests and GUI thumbnails); throws ExportError.
std::vector<uint8_t> read_png_rgba(const std::string& path, int* w, int* h);

// CSV (RFC 4180 style, "\n" line ends). A field is quoted when it contains a comma, a quote,
// CR or LF, or starts / ends with a space; quotes inside are doubled.
// write_csv_matrix: header row = "" then the column labels (indices "0".."cols-1" when
// col_labels is empty); then one line per row: its label (or index) and the values with
// 9 significant digits (float round-trip); NaN -> "nan", +-Inf -> "inf" / "-inf".
// Sizes are validated (std::invalid_argument naming the field).
// write_csv_table: header (may be empty = no header line), then rows; every row must have
// header.size() fields when a header is given.
std::string csv_field(std::string_view field);
// A number in a file cell (every CSV the program writes): 9 significant digits (a float reads
// back bit for bit), "nan", "inf", "-inf" (as pandas and numpy read them). The one formatter
// for a value written to a file (docs/architecture.md#conventions).
std::string csv_number(double v);
void write_csv_matrix(const std::string& path, int rows, int cols,
                      const std::vector<float>& values,
                      const std::vector<std::string>& row_labels,
                      const std::vector<std::string>& col_labels);
void write_csv_table(const std::string& path, const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows);

}  // namespace mnemo::viz
