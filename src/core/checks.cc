#include "core/checks.h"

#include <cstdlib>
#include <cstring>

namespace nf::detail {

namespace {
bool checks_from_environment() {
  const char* v = std::getenv("NUMFUSE_CHECKS");
  if (v && *v) return std::strcmp(v, "0") != 0;
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}
}  // namespace

std::atomic<bool> g_checks{checks_from_environment()};

}  // namespace nf::detail
