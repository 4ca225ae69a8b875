// Precompiled header for every target that includes LibTorch (CMake target mnemo_pch).
#pragma once
#include <torch/torch.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <memory>
