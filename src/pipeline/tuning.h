// Internal to the pipeline: choosing a group's schedule (random for property
// tests, tuned from the store, or the default) and the auto-tuning driver
// that measures candidate schedules (tune::search decides which).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jit/jit.h"
#include "mdh/mdh.h"
#include "pipeline/pipeline.h"
#include "pipeline/target.h"
#include "tune/tune.h"

namespace nf::pipeline::detail {

std::string kernel_key(const mdh::MdHom& h, const tune::Schedule& s, const Target& t = cpu_target());
// The compiled kernel of (h, s) for t, from the kernel caches or compiled now
// at `opt` (t's passes, renderer and compiler).
jit::KernelRef compile_kernel(const mdh::MdHom& h, const tune::Schedule& s, jit::Opt opt = jit::Opt::Full,
                              bool* hit = nullptr, bool* disk_hit = nullptr, const Target& t = cpu_target());
// The multi-stage kernel of the stages (homs, schedules) composed as
// `shape` (lower.h: lower with a ChainShape), keyed by the shape and the stages' keys.
std::string chain_key(const std::vector<const mdh::MdHom*>& homs, const std::vector<tune::Schedule>& schedules,
                      const lower::ChainShape& shape, const Target& t = cpu_target());
jit::KernelRef compile_chain(const std::vector<const mdh::MdHom*>& homs, const std::vector<tune::Schedule>& schedules,
                             const lower::ChainShape& shape, jit::Opt opt = jit::Opt::Full, bool* hit = nullptr,
                             bool* disk_hit = nullptr, const Target& t = cpu_target());
// Runs h under s on b (the kernel k, or the library routine). A Quick kernel
// is timed (its first 8 launches, then one in 8, weighted); once its runs add up to kUpgradeAfterNs it is recompiled Full in
// the background (the upgrade pays for itself when the kernel keeps running).
void run_scheduled(const mdh::MdHom& h, const tune::Schedule& s, jit::Kernel* k, const mdh::Bindings& b,
                   const Target& t = cpu_target());
constexpr int64_t kUpgradeAfterNs = 2'000'000;
// A Quick kernel that ran `ns` as a stage of a multi-stage launch: counted
// toward its upgrade like run_scheduled's timed launches.
void credit_quick(jit::Kernel* k, int64_t ns);

// The schedule a new plan uses for h; `tuned` tells whether it came from the
// store. May queue h for background tuning (Config::tune_seconds).
tune::Schedule choose_schedule(const mdh::MdHom& h, const mdh::Bindings& b, const Config& cfg, bool* tuned);

// Where the buffers of a group's bindings lie relative to each other, so
// that tuning can run on synthetic data of the same shape (aliasing kept)
// without holding on to the program's arrays.
struct SynthSpec {
  std::vector<int> group;         // per pointer slot: synthetic buffer index
  std::vector<int64_t> offsets;   // per pointer slot: byte offset in it
  std::vector<int64_t> bytes;     // per synthetic buffer
  std::vector<DType> fill;        // per synthetic buffer: the type its data is drawn in
  std::vector<int64_t> ints;
  std::vector<double> floats;
  int64_t total_bytes() const;
};
SynthSpec synth_spec(const mdh::MdHom& h, const mdh::Bindings& b);

// A kernel seen by tune capture (numfuse.tune) or queued for background tuning.
struct TuneJob {
  std::shared_ptr<const mdh::MdHom> hom;
  SynthSpec spec;
  std::string ops;       // the group's operations, for reports
  std::string cls;       // size class
  double weight_ms = 0;  // observed run time x occurrences
  int count = 1;
};

// Capture (numfuse.tune): while on, every group run is remembered.
void capture_group(const std::shared_ptr<const mdh::MdHom>& hom, const mdh::Bindings& b, const std::string& ops,
                   double run_ms);
bool capturing();

}  // namespace nf::pipeline::detail
