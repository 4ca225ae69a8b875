#include "app/figures/html_viewer.h"

#include "app/figures/benefit.h"
#include "app/figures/html_viewer_template.h"  // generated: kViewerTemplate (python/mnemoscope/viewer/viewer.html)
#include "core/trace/slot_types.h"
#include "viz/colormap.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace mnemo::app {

using nlohmann::json;

namespace {

// Arrays go into one buffer; the JSON names each by {"t": type, "o": offset, "n": count}.
// f32 / i32: the n values' bytes as four planes (byte 0 of every value, then byte 1, ...;
// little-endian bytes), which deflate packs far better than interleaved floats.
class Buffer {
 public:
  json f32(const float* v, size_t n) {
    std::vector<uint32_t> bits(n);
    if (n) std::memcpy(bits.data(), v, n * 4);
    return planes("f32", bits);
  }
  json f32(const std::vector<float>& v) { return f32(v.data(), v.size()); }
  json i32(const std::vector<int64_t>& v) {
    std::vector<uint32_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) bits[i] = static_cast<uint32_t>(static_cast<int32_t>(v[i]));
    return planes("i32", bits);
  }
  json u8(const std::vector<uint8_t>& v) {
    json r = {{"t", "u8"}, {"o", bytes_.size()}, {"n", v.size()}};
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size());
    return r;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  json planes(const char* type, const std::vector<uint32_t>& bits) {
    json r = {{"t", type}, {"o", bytes_.size()}, {"n", bits.size()}};
    for (int b = 0; b < 4; ++b)
      for (uint32_t x : bits) bytes_.push_back(static_cast<char>((x >> (8 * b)) & 0xffu));
    return r;
  }
  std::string bytes_;
};

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }  // JSON has no NaN

json losses(Buffer& buf, const TokenLosses& l) {
  if (l.empty()) return nullptr;
  return {{"first", l.first}, {"values", buf.f32(l.values)}};
}

json blocks(const std::vector<AttnBlock>& b) {
  json out = json::array();
  for (const auto& x : b) out.push_back({{"first", x.first}, {"count", x.count}, {"name", x.name}});
  return out;
}

// Block 0 (the mean over heads) of every `per`-sized map of `blocks` blocks per group.
std::vector<float> means_only(const std::vector<float>& v, size_t per, size_t blocks) {
  std::vector<float> out;
  for (size_t g = 0; per > 0 && (g * blocks + 1) * per <= v.size(); ++g)
    out.insert(out.end(), v.begin() + static_cast<std::ptrdiff_t>(g * blocks * per),
               v.begin() + static_cast<std::ptrdiff_t>((g * blocks + 1) * per));
  return out;
}

json attention(Buffer& buf, const AttentionData& a, bool heads) {
  const size_t map = static_cast<size_t>(a.rows) * static_cast<size_t>(a.cols), nb = static_cast<size_t>(a.blocks());
  const size_t nm = a.mass_names.size();
  json j = {{"kind", a.kind},          {"source", a.source},         {"layers", a.layers},
            {"heads", heads ? a.heads : 0}, {"heads_traced", a.heads}, {"rows", a.rows}, {"cols", a.cols},
            {"values", buf.f32(heads ? a.values : means_only(a.values, map, nb))},
            {"block_max", buf.f32(heads ? a.block_max : means_only(a.block_max, 1, nb))},
            {"row_labels", a.row_labels}, {"col_labels", a.col_labels},
            {"row_token", buf.i32(a.row_token)}, {"col_token", buf.i32(a.col_token)},
            {"row_blocks", blocks(a.row_blocks)}, {"col_blocks", blocks(a.col_blocks)},
            {"mass_names", a.mass_names}, {"mass_help", a.mass_help},
            {"mass", buf.f32(heads ? a.mass : means_only(a.mass, nm, nb))},
            {"traced_mass", a.traced_mass}};
  return j;
}

json writer(Buffer& buf, const MemformerData& st, bool heads) {
  if (!st.has_writer()) return nullptr;
  const size_t map = static_cast<size_t>(st.slots) * static_cast<size_t>(st.cols);
  const SlotThresholds th;
  std::vector<uint8_t> types;
  for (float m : st.self_mass) types.push_back(static_cast<uint8_t>(classify_mass(m, th)));
  return {{"slots", st.slots},
          {"heads", heads ? st.heads : 0},
          {"heads_traced", st.heads},
          {"cols", st.cols},
          {"n_cls", st.n_cls},
          {"col_labels", st.col_labels},
          {"values", buf.f32(heads ? st.writer : means_only(st.writer, map, static_cast<size_t>(st.heads + 1)))},
          {"block_max", buf.f32(heads ? st.block_max : std::vector<float>(st.block_max.begin(), st.block_max.begin() + 1))},
          {"self_mass", buf.f32(st.self_mass)},
          {"slot_types", buf.u8(types)},
          {"forget_norm", buf.f32(st.forget_norm)},
          {"thresholds", {{"retain_min", th.retain_min}, {"overwrite_max", th.overwrite_max}}}};
}

json mtn(const MtnData& m) {
  if (!m.present) return nullptr;
  json entries = json::array();
  for (const auto& e : m.entries) entries.push_back({e.source, num(e.importance), e.age});
  json cands = json::array();
  for (size_t i = 0; i < m.cand_source.size(); ++i)
    cands.push_back({m.cand_source[i], num(m.cand_importance[i]), m.cand_kept[i] != 0});
  return {{"entries", entries},      {"kept", m.kept},           {"max_age", m.max_age},
          {"imp_min", num(m.imp_min)}, {"imp_max", num(m.imp_max)}, {"candidates", cands},
          {"n_mem_candidates", m.n_mem_candidates}};
}

json hash(Buffer& buf, const HashData& h) {
  if (h.empty()) return nullptr;
  json paths = json::array();
  for (const auto& p : h.paths) {
    json e = {{"path", p.path},       {"group", p.group},         {"projection", p.projection},
              {"tables", p.tables},   {"buckets", p.buckets},     {"counts", buf.f32(p.counts)},
              {"load", buf.f32(p.load)}, {"p_hist", buf.f32(p.p_hist)}, {"p_count", p.p_count},
              {"p_mean", num(p.p_mean)}, {"mean_entropy", num(p.mean_entropy)}, {"mean_dead", num(p.mean_dead)},
              {"mean_max_load", num(p.mean_max_load)}};
    json ent = json::array(), dead = json::array(), ml = json::array();
    for (size_t k = 0; k < p.entropy.size(); ++k) {
      ent.push_back(num(p.entropy[k]));
      dead.push_back(num(p.dead_fraction[k]));
      ml.push_back(num(p.max_load[k]));
    }
    e["entropy"] = ent;
    e["dead_fraction"] = dead;
    e["max_load"] = ml;
    e["lookups"] = p.lookups;
    paths.push_back(std::move(e));
  }
  return {{"paths", paths}, {"groups", h.groups}};
}

json reads_of(const MemoryReads& r) {
  json top = json::array();
  for (const auto& m : r.top) {
    json holds = json::array();
    for (const auto& h : m.holds) holds.push_back({h.token, num(h.weight)});
    top.push_back({{"entry", m.entry}, {"token", m.token}, {"weight", num(m.weight)}, {"holds", holds},
                   {"initial", num(m.initial_share)}});
  }
  return {{"token", r.token},          {"entry_name", r.entry_name}, {"how", r.how},
          {"layer", r.layer},          {"memory_share", num(r.memory_share)}, {"own_read", r.own_read},
          {"predicted", r.predicted},  {"gate", num(r.gate)},         {"entries_total", r.entries_total},
          {"holds_known", r.holds_known}, {"holds_note", r.holds_note}, {"top", top}};
}

// What every memory entry held after the step (the slot follower): [slots x k] tokens and
// shares, the initial memory's share [slots].
json holds_after(Buffer& buf, const ProvenanceState* p) {
  if (!p || p->top_k <= 0) return nullptr;
  std::vector<int64_t> tok;
  std::vector<float> w;
  for (const auto& s : p->top) {
    tok.push_back(s.token);
    w.push_back(s.weight);
  }
  return {{"slots", p->slots}, {"k", p->top_k}, {"tokens", buf.i32(tok)}, {"weights", buf.f32(w)},
          {"initial", buf.f32(p->initial)}};
}

std::vector<uint8_t> colormap_lut(viz::Colormap m) {
  std::vector<uint8_t> out;
  for (int i = 0; i < 256; ++i) {
    const viz::Rgb c = viz::sample(m, static_cast<float>(i) / 255.f);
    out.insert(out.end(), {c.r, c.g, c.b});
  }
  return out;
}

}  // namespace

ViewerData pack_viewer_data(const ViewerInput& in, const Document& doc) {
  Buffer buf;
  json j;
  j["format"] = "mnemoscope-viewer";
  j["format_version"] = 1;
  j["program_version"] = in.program_version;
  j["title"] = in.title;
  j["model"] = in.model;
  j["model_note"] = in.model_note;
  j["segment_len"] = in.segment_len;
  j["num_segments"] = in.num_segments;
  j["from"] = in.steps.empty() ? 0 : in.steps.front().step->segment;
  j["to"] = in.steps.empty() ? -1 : in.steps.back().step->segment;
  // The document up to the last token a shown step predicts or reads.
  int64_t end = 0;
  for (const auto& s : in.steps) {
    const StepData& st = *s.step;
    end = std::max(end, st.first_token + st.length);
    if (!st.token_losses.empty()) end = std::max(end, st.token_losses.first + static_cast<int64_t>(st.token_losses.values.size()));
    end = std::max(end, (st.segment + 1) * st.segment_len + st.memformer.decoder_rows());
  }
  end = std::min(end, doc.size());
  // From kViewerContext tokens before the first shown segment (what reads and slots point back to;
  // a token before it is named by its index only).
  const int64_t first = in.steps.empty() ? 0 : std::max<int64_t>(0, in.steps.front().step->first_token - kViewerContext);
  j["doc_size"] = doc.size();
  j["doc_first"] = first;
  j["doc"] = buf.u8(std::vector<uint8_t>(doc.bytes.begin() + std::min(first, end), doc.bytes.begin() + end));
  j["colormaps"] = {{"viridis", buf.u8(colormap_lut(viz::Colormap::Viridis))},
                    {"magma", buf.u8(colormap_lut(viz::Colormap::Magma))},
                    {"diverging", buf.u8(colormap_lut(viz::Colormap::Diverging))}};
  json segs = json::array();
  for (const auto& s : in.steps) {
    const StepData& st = *s.step;
    json e = {{"segment", st.segment},
              {"first_token", st.first_token},
              {"length", st.length},
              {"loss", num(st.loss)},
              {"non_finite", st.non_finite},
              {"non_finite_key", st.non_finite_key},
              {"loss_next_segment", st.loss_next_segment},
              {"losses", losses(buf, st.token_losses)},
              {"losses_reset", losses(buf, st.token_losses_reset)},
              {"losses_zeroed", losses(buf, st.token_losses_zeroed)},
              {"benefit_bits", num(segment_benefit_bits(st))},
              {"writer", writer(buf, st.memformer, in.heads)},
              {"mtn", mtn(st.mtn)},
              {"hash", hash(buf, st.hash)},
              {"holds_after", holds_after(buf, s.provenance.get())}};
    json att = json::array();
    if (!st.attention.empty()) att.push_back(attention(buf, st.attention, in.heads));
    for (const auto& a : st.extra_attention)
      if (!a.empty()) att.push_back(attention(buf, a, in.heads));
    e["attention"] = att;
    // The memory reads of every token the step reads for or predicts (app/figures/memory_reads.h).
    json reads = json::array();
    auto add = [&](int64_t t) {
      const MemoryReads r = memory_reads(st, in.visited, t, 3, s.provenance_before.get());
      if (!r.empty()) reads.push_back(reads_of(r));
    };
    for (int64_t t = st.first_token; t < st.first_token + st.length; ++t) add(t);
    for (int64_t p = 0; p < st.memformer.decoder_rows(); ++p) add((st.segment + 1) * st.segment_len + p);
    e["reads"] = reads;
    segs.push_back(std::move(e));
  }
  j["segments"] = segs;
  // One blob: a 4-byte little-endian length of the JSON text, the JSON, then the arrays.
  const std::string text = j.dump();
  std::string blob;
  const uint32_t n = static_cast<uint32_t>(text.size());
  for (int b = 0; b < 4; ++b) blob.push_back(static_cast<char>((n >> (8 * b)) & 0xffu));
  blob += text;
  blob += buf.bytes();
  ViewerData out;
  out.raw_bytes = blob.size();
  const std::string packed = zlib_deflate(blob);
  out.packed_bytes = packed.size();
  out.block = base64_encode(packed);
  return out;
}

const std::string& viewer_template() {
  static const std::string t(kViewerTemplate);
  return t;
}

namespace {
std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}
void replace_once(std::string& s, const std::string& what, const std::string& with) {
  const size_t at = s.find(what);
  if (at == std::string::npos) throw std::logic_error("the viewer template has no " + what);
  s.replace(at, what.size(), with);
}
}  // namespace

std::string viewer_html(const ViewerData& data, const std::string& title) {
  std::string page = viewer_template();
  replace_once(page, kViewerTitlePlaceholder, html_escape(title));
  replace_once(page, kViewerDataPlaceholder, data.block);  // base64: nothing to escape
  return page;
}

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += {kB64[v >> 18], kB64[(v >> 12) & 63], kB64[(v >> 6) & 63], kB64[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    out += {kB64[v >> 18], kB64[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8);
    out += {kB64[v >> 18], kB64[(v >> 12) & 63], kB64[(v >> 6) & 63], '='};
  }
  return out;
}

std::string base64_decode(const std::string& text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const char* p = std::strchr(kB64, c);
    if (!p || c == '\0') throw std::runtime_error(std::string("base64: unexpected character '") + c + "'");
    acc = (acc << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xffu));
    }
  }
  return out;
}

std::string zlib_deflate(const std::string& bytes) {
  uLongf n = compressBound(static_cast<uLong>(bytes.size()));
  std::string out(n, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(bytes.data()),
                static_cast<uLong>(bytes.size()), 9) != Z_OK)
    throw std::runtime_error("zlib: cannot compress the viewer data");
  out.resize(n);
  return out;
}

std::string zlib_inflate(const std::string& bytes) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) throw std::runtime_error("zlib: inflateInit failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char chunk[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: the viewer data are corrupt or truncated");
  return out;
}

}  // namespace mnemo::app
