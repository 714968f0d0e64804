#include "core/capture.h"

namespace nf {

std::atomic<uint32_t> g_capture_epoch{0};
[[gnu::tls_model("initial-exec")]] thread_local bool t_capturing = false;

namespace {
std::string& abort_reason() {
  static std::string* r = new std::string();
  return *r;
}
}  // namespace

void capture_abort(const std::string& why) {
  if (abort_reason().empty()) abort_reason() = why;
  throw TraceAbort(abort_reason());
}

const std::string& capture_aborted() { return abort_reason(); }
void capture_clear_abort() { abort_reason().clear(); }

}  // namespace nf
