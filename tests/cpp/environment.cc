// The test binary is the owner of the pipeline's background threads: it
// stops them before exit, as the Python module's exit handler does
// (pipeline/worker.h). A background compile still running while static
// destructors run would use clang's destroyed option tables.
#include <gtest/gtest.h>

#include "pipeline/pipeline.h"

namespace {

class StopBackground : public ::testing::Environment {
 public:
  void TearDown() override { nf::pipeline::background_stop(); }
};

[[maybe_unused]] ::testing::Environment* const g_env = ::testing::AddGlobalTestEnvironment(new StopBackground);

}  // namespace
