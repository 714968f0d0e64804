// Device memory: where a target's kernels read and write when they do not
// run on the host (runtime/ provides the devices: the emulated one, CUDA's).
// A buffer (buffer.h) keeps a copy on at most one device, with which of its
// copies hold its contents: kernels on the device read the device copy,
// everything on the host -- tier 0, library routines, NumPy, printing --
// reads the host copy, each brought up to date on first use.
#pragma once

#include <cstdint>

namespace nf {

class Device {
 public:
  virtual ~Device() = default;
  virtual const char* name() const = 0;
  // `bytes` of device memory (at least one byte); throws MemoryError when
  // the device has none left.
  virtual void* alloc(int64_t bytes) = 0;
  virtual void free(void* p, int64_t bytes) = 0;
  virtual void to_device(void* dst, const void* src, int64_t bytes) = 0;
  virtual void to_host(void* dst, const void* src, int64_t bytes) = 0;
  // The host copy `host` went stale (the device copy is newer): the
  // emulated device fills it with 0xff bytes, so a read that misses the
  // copy back shows.
  virtual void host_stale(void* host, int64_t bytes) {}
  // Device memory to device memory (a DLPack export's own copy).
  virtual void copy(void* dst, const void* src, int64_t bytes) = 0;
  // Where a DLPack consumer finds this device's memory: (kDLCUDA = 2, the
  // device's ordinal) for a GPU; the emulated device's memory is the
  // host's (kDLCPU = 1, 0).
  virtual void dlpack_device(int32_t* type, int32_t* id) const = 0;
};

}  // namespace nf
