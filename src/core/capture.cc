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

namespace {
std::vector<CaptureParam>& params() {
  static std::vector<CaptureParam>* p = new std::vector<CaptureParam>();
  return *p;
}
}  // namespace

uint32_t capture_param(int index, double value) {
  params().push_back({index, value, false});
  return static_cast<uint32_t>(params().size());
}

void capture_param_dropped(uint32_t serial) {
  if (serial >= 1 && serial <= params().size()) params()[serial - 1].dropped = true;
}

const std::vector<CaptureParam>& capture_params() { return params(); }

void capture_abort(const std::string& why) {
  if (abort_reason().empty()) abort_reason() = why;
  throw TraceAbort(abort_reason());
}

const std::string& capture_aborted() { return abort_reason(); }
void capture_clear_abort() {
  abort_reason().clear();
  params().clear();
}

}  // namespace nf
