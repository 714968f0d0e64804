// The core's part of numfuse.jit's capture (trace/trace.h): which thread
// captures, which memory was made during the capture, and why a capture
// stopped. Kept here because Buffer::data() checks it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace nf {

// A capture stopped: the traced function needs something a captured
// program cannot give (a value in Python, an operation the capture cannot
// keep). The Python layer runs the function the ordinary way instead.
struct TraceAbort : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The capture running, numbered from 1 (0: none ever). Buffers remember
// the epoch they were made in (Buffer::capture_epoch).
extern std::atomic<uint32_t> g_capture_epoch;
// Set on the capturing thread while it captures: Buffer::data() then checks
// the memory it hands out (capture_touch).
[[gnu::tls_model("initial-exec")]] extern thread_local bool t_capturing;

// A capture keeps at most this many tasks (each about 1 KB) before it stops.
constexpr size_t kMaxCapturedTasks = 400000;

// Parameters. A traced call's Python float arguments reach the core as
// stand-ins (numfuse.jit's _Param); each conversion of one into an operand
// registers here and gets a serial (from 1) that the Scalar carries
// (Scalar::param) into the task's constants, where the program reads the
// argument of each call instead of the traced value. A conversion whose
// value is used any other way (cast to an integer, a value the recording
// decides on: x ** 2.0 is squared) is dropped: that argument becomes a
// guard instead (the call's value must equal the traced one).
struct CaptureParam {
  int index = 0;        // which argument (numfuse.jit's numbering)
  double value = 0;     // its value in the traced call
  bool dropped = false;
};
// Registers a conversion of parameter `index` (value `value`); returns its serial.
uint32_t capture_param(int index, double value);
void capture_param_dropped(uint32_t serial);
// The conversions of the running (or last) capture, serial k at [k - 1].
const std::vector<CaptureParam>& capture_params();

// Records the first reason a capture stopped and throws TraceAbort.
[[noreturn]] void capture_abort(const std::string& why);
// The first reason the running (or last) capture stopped, "" if none.
const std::string& capture_aborted();
void capture_clear_abort();

}  // namespace nf
