// Internal to the pipeline: which tier runs a recorded group.
//
// A group's fused kernel is an investment: compiling costs tens of
// milliseconds, once per kernel (then the caches serve it). The flush
// compiles at once when running the group on tier 0 -- its tasks one after
// another, by the interpreter -- would cost more than the compile; otherwise
// tier 0 runs it, and when the same window comes back the kernel is compiled
// in the background (compile_queue.cc) and taken up once ready. A kernel
// repeated in its window (a loop body) whose repetitions together cost more
// than the compile, but each one little (flush.cc: kRepetitionShare), is
// queued for the background compiler at once: tier 0 runs the repetitions
// until it is ready, and the later ones take it. A multi-stage kernel
// (fusion::Chain) is decided the same way for all its stages together: at
// first sight, when tier 0 runs them for less than a compile, they are
// interpreted and the kernel compiles in the background. The tier is
// forced by Config::tier: Lazy always compiles (the compiled tier, as tests
// and benchmarks of it need), Eager interprets whenever it can.
#pragma once

#include "pipeline/target.h"

#include <memory>
#include <utility>
#include <vector>

#include "fusion/fusion.h"
#include "jit/jit.h"
#include "mdh/mdh.h"
#include "stream/stream.h"
#include "tune/tune.h"

namespace nf::pipeline::detail {

// Whether tier 0 can run every live task of `g`.
bool interpretable(const std::vector<Task>& window, const fusion::Group& g);
// Estimated milliseconds for tier 0 to run the live tasks of `g`.
double interpret_estimate_ms(const std::vector<Task>& window, const fusion::Group& g);
double interpret_estimate_ms(const std::vector<Task>& window, int begin, int end, const std::vector<int>& dead);
// Runs the tasks [begin, end) of the window on tier 0, skipping `dead`
// ones. Every output is allocated before the first task runs, so the group
// runs whole or (on an allocation failure) not at all. Large groups splice
// an elementwise task into its one reader (tier0.cc): returns the passes
// made (the tasks run, spliced ones counted in their readers).
// `memo` (a plan group's, for every window of its plan): what the first run
// decided -- which tasks were spliced into which readers, which temporaries
// share a block -- so that later runs replay it without the analysis (a
// scan from each task to the window's end).
struct Tier0Memo {
  bool analysed = false;
  std::vector<std::pair<int, std::vector<int>>> splices;  // (producer, its readers), in the order applied
  std::vector<std::pair<int, int>> shares;                // (task, task whose block its output takes)
  double estimate_ms = -1;  // interpret_estimate_ms of the group (explain()), once found
};
int interpret(const std::vector<Task>& window, int begin, int end, const std::vector<int>& dead,
              Tier0Memo* memo = nullptr);
// A floating-point matrix product task run with BLAS (false: not one).
bool run_matmul_blas(const Task& t);
// The window was taken by a flush: no small task is pending any more
// (settling, tier0.cc).
void note_window_taken();

// Milliseconds a kernel compile is expected to take (measured as they run).
double compile_estimate_ms();
void note_compile_ms(double ms);

// The background compiler.
void compile_in_background(std::shared_ptr<const mdh::MdHom> hom, const tune::Schedule& s,
                           const Target& t = cpu_target());
// A multi-stage kernel (fusion::Chain) for the background compiler: its
// stages (templates: the homs), their schedules and the launch's shape.
struct ChainCompile {
  std::vector<std::shared_ptr<const mdh::Built>> stages;
  std::vector<tune::Schedule> schedules;
  lower::ChainShape shape;
  const Target* target = &cpu_target();
};
void compile_chain_in_background(std::string key, std::shared_ptr<const ChainCompile> chain);
// Whether the background compiler has the kernel of `key` queued or compiling.
bool compile_pending(const std::string& key);
// Recompiles a Quick kernel Full on the background compiler (once per kernel).
void upgrade_in_background(jit::KernelRef k);
// While one lives on a thread (a flush), the compiles it asks for are held
// and queued when it ends (the outermost one).
class CompileHold {
 public:
  CompileHold();
  ~CompileHold();
  CompileHold(const CompileHold&) = delete;
  CompileHold& operator=(const CompileHold&) = delete;

 private:
  bool mine_ = false;
};
void compile_queue_wait();
void compile_queue_pause();
void compile_queue_resume();
void compile_queue_reset_in_child();
void compile_queue_stop();
int compile_queue_done();
void compile_queue_forget();  // the finished compiles may be asked for again

}  // namespace nf::pipeline::detail
