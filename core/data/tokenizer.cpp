#include "core/data/tokenizer.h"

namespace mnemo {

std::vector<int64_t> ByteTokenizer::encode(std::string_view bytes, std::vector<std::pair<int64_t, int64_t>>* offsets) {
  std::vector<int64_t> ids(bytes.size());
  if (offsets) offsets->resize(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    ids[i] = static_cast<unsigned char>(bytes[i]);
    if (offsets) (*offsets)[i] = {static_cast<int64_t>(i), static_cast<int64_t>(i + 1)};
  }
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids) {
  std::string out;
  out.reserve(ids.size());
  for (int64_t id : ids)
    if (id >= 0 && id < 256) out.push_back(static_cast<char>(id));
  return out;
}

const char* ByteTokenizer::special_name(int64_t id) {
  switch (id) {
    case kPad: return "<pad>";
    case kBos: return "<bos>";
    case kEos: return "<eos>";
    case kCls: return "<cls>";
    case kSep: return "<sep>";
    case kMem: return "<mem>";
    default: return "";
  }
}

}  // namespace mnemo
