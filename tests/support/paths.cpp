// The source tree and the built program for the tests (tests/support/helpers.h: MNEMO_SOURCE_DIR,
// MNEMO_BINARY). Their absolute paths are compile definitions of this file alone
// (tests/CMakeLists.txt), so no other test object's flags hold a checkout path.
#include "tests/support/helpers.h"

namespace mnemo::test {

const char* source_dir() { return MNEMO_TEST_SOURCE_DIR; }
const char* program_path() { return MNEMO_TEST_PROGRAM; }

}  // namespace mnemo::test
