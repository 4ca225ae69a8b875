// The source tree and the built program for the tests (tests/support/helpers.h: MNEMO_SOURCE_DIR,
// MNEMO_BINARY). Their absolute paths are compile definitions of this file alone
// (tests/CMakeLists.txt), so every other test file compiles to the same command line in any
// clone or worktree and ccache (CCACHE_BASEDIR, .ci/build) shares it between them.
#include "tests/support/helpers.h"

namespace mnemo::test {

const char* source_dir() { return MNEMO_TEST_SOURCE_DIR; }
const char* program_path() { return MNEMO_TEST_PROGRAM; }

}  // namespace mnemo::test
