// User-facing error types of the core (messages name the field or file and the fix).
#pragma once
#include <stdexcept>

namespace mnemo {

// A configuration problem; what() names the field, the value and the allowed range.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace mnemo
