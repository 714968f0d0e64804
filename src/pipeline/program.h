// numfuse.jit's programs through the back end: a rerolled trace
// (trace/trace.h) lowered (lower.h: lower_program), rendered as C,
// compiled once (cached in memory and on disk by its source), and run on
// the arguments of each call. The CPU target only.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "jit/jit.h"
#include "trace/trace.h"

namespace nf::pipeline {

struct CompiledProgram {
  std::shared_ptr<const trace::Program> program;
  jit::KernelRef kernel;
  std::string key;
  double compile_ms = 0;  // 0: found compiled (in memory or on disk)
  std::string source;
  // The memory a run makes (Temp, Constant and Param slots that are not a
  // result) lies in one block of arena_bytes: slot k at arena_offset[k]
  // (64-byte aligned; -1: a slot of its own or the caller's memory).
  std::vector<int64_t> arena_offset;
  int64_t arena_bytes = 0;
};

// Lowers, renders and compiles `p`. Throws trace::Unsupported (a form the
// lowering does not take) or jit::CompileError.
std::shared_ptr<CompiledProgram> compile_program(std::shared_ptr<const trace::Program> p);

// Runs the program on `args` (the traced call's array arguments, in the
// same order, of the shapes, dtypes and strides the trace saw: the
// caller's guards) and `params` (the call's float arguments by
// numfuse.jit's numbering, read by Slot::Kind::Param) and sets `results`
// to the views it returns. False, with nothing run, when an argument's
// memory does not hold every element the program touches (another offset
// into a smaller buffer) or a parameter is missing. Floating-point flags
// it raises are queued as a flush's are (take_fp_events).
bool run_program(const CompiledProgram& c, const std::vector<View>& args, std::span<const double> params,
                 std::vector<View>* results);

}  // namespace nf::pipeline
