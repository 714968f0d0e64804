// numfuse.jit's programs (program.h).
#include "pipeline/program.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "codegen/codegen.h"
#include "core/fpe.h"
#include "lower/lower.h"
#include "pipeline/pipeline.h"

namespace nf::pipeline {

namespace {
// The memory a run makes for a slot of its own (Temp, Constant, Param).
int64_t own_bytes(const trace::Slot& s) {
  return s.kind == trace::Slot::Kind::Param ? itemsize(s.dtype) : std::max<int64_t>(s.nbytes, 1);
}
}  // namespace

std::shared_ptr<CompiledProgram> compile_program(std::shared_ptr<const trace::Program> p) {
  auto c = std::make_shared<CompiledProgram>();
  c->program = p;
  // The kernel's name is its text's hash (the text with a fixed name first).
  const std::string draft = codegen::render_c(lower::lower_program(*p, "nf_program")).code;
  char name[40];
  std::snprintf(name, sizeof name, "nf_prog_%016llx_%zx", static_cast<unsigned long long>(jit::hash64(draft)),
                draft.size() & 0xfffff);
  const lower::LoopNest nest = lower::lower_program(*p, name);
  codegen::Source src = codegen::render_c(nest);
  c->source = src.code;
  c->key = std::string("program|") + name + "|" + codegen::nan_rules_id();
  // One block for the run's own memory that no result keeps.
  std::vector<char> is_result(p->slots.size(), 0);
  for (const trace::Program::Result& r : p->results) is_result[static_cast<size_t>(r.slot)] = 1;
  c->arena_offset.assign(p->slots.size(), -1);
  for (size_t k = 0; k < p->slots.size(); ++k) {
    const trace::Slot& s = p->slots[k];
    if (is_result[k] || s.kind == trace::Slot::Kind::Arg || s.kind == trace::Slot::Kind::External) continue;
    c->arena_offset[k] = c->arena_bytes;
    c->arena_bytes += (own_bytes(s) + 63) / 64 * 64;
  }
  const auto t0 = std::chrono::steady_clock::now();
  bool hit = false, disk = false;
  c->kernel = jit::KernelCache::instance().get(c->key, [&] { return src; }, jit::Opt::Full, &hit, &disk);
  if (!hit && !disk)
    c->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

bool run_program(const CompiledProgram& c, const std::vector<View>& args, std::span<const double> params,
                 std::vector<View>* results) {
  const trace::Program& p = *c.program;
  std::vector<BufferPtr> mem(p.slots.size());
  std::vector<char*> ptrs(p.slots.size());
  BufferPtr arena;
  char* base = nullptr;
  if (c.arena_bytes > 0) {
    arena = Buffer::make(c.arena_bytes);
    base = static_cast<char*>(arena->data());
  }
  for (size_t k = 0; k < p.slots.size(); ++k) {
    const trace::Slot& s = p.slots[k];
    const int64_t is = itemsize(s.dtype);
    // (the block's slots: their memory is ready; a result's gets its own)
    auto own = [&] {
      if (c.arena_offset[k] >= 0) {
        mem[k] = arena;
        ptrs[k] = base + c.arena_offset[k];
      } else {
        mem[k] = Buffer::make(own_bytes(s));
        ptrs[k] = static_cast<char*>(mem[k]->data());
      }
    };
    switch (s.kind) {
      case trace::Slot::Kind::Arg: {
        const View& a = args.at(static_cast<size_t>(s.arg));
        if (s.hi >= s.lo && (a.offset + s.lo < 0 || (a.offset + s.hi + 1) * is > a.buffer->nbytes())) return false;
        mem[k] = a.buffer;
        ptrs[k] = static_cast<char*>(a.buffer->data()) + a.offset * is;
        break;
      }
      case trace::Slot::Kind::External:
        mem[k] = s.buffer;
        ptrs[k] = static_cast<char*>(s.buffer->data());
        break;
      case trace::Slot::Kind::Constant:
        own();
        std::memcpy(ptrs[k], s.bytes.data(), s.bytes.size());
        break;
      case trace::Slot::Kind::Param: {
        if (s.arg < 0 || static_cast<size_t>(s.arg) >= params.size()) return false;
        own();
        const double v = params[static_cast<size_t>(s.arg)];
        if (is_float(s.dtype)) {
          Scalar::of_float(DType::Float64, v).cast(s.dtype).store(ptrs[k]);
        } else {
          // An int parameter converted to an integer type at the trace: this
          // call's value must fit it (NumPy raises OverflowError where it
          // does not: the ordinary run does).
          if (v != std::trunc(v) || std::fabs(v) >= 9007199254740992.0 || !int_fits(s.dtype, static_cast<int64_t>(v)))
            return false;
          Scalar::of_int(DType::Int64, static_cast<int64_t>(v)).cast(s.dtype).store(ptrs[k]);
        }
        break;
      }
      case trace::Slot::Kind::Temp:
        own();
        break;
    }
  }
  fpe::take();
  c.kernel->fn.load(std::memory_order_acquire)(ptrs.data(), nullptr, nullptr);
  if (const uint8_t f = fpe::take()) {
    std::vector<const char*> ops;
    for (const Task& t : p.tasks)
      for (const char* o : fp_ops_of(t.expr, t.kind != Task::Kind::Map))
        if (std::find(ops.begin(), ops.end(), o) == ops.end()) ops.push_back(o);
    // As a flush does: flags libmvec's lanes raise for extreme values count
    // only without such a value among the operands (every slot's memory).
    std::vector<View> held;
    held.reserve(p.slots.size());
    for (size_t k = 0; k < p.slots.size(); ++k) {
      const trace::Slot& s = p.slots[k];
      if (s.kind == trace::Slot::Kind::Arg) {
        held.push_back(args.at(static_cast<size_t>(s.arg)));
        continue;
      }
      View v;
      v.buffer = mem[k];
      v.dtype = s.dtype;
      const int64_t is = itemsize(s.dtype);
      if (c.arena_offset[k] >= 0) v.offset = c.arena_offset[k] / is;
      v.shape = {own_bytes(s) / is};
      v.strides = {1};
      held.push_back(std::move(v));
    }
    std::vector<const View*> inputs;
    for (const View& v : held) inputs.push_back(&v);
    bool extreme_const = false;
    for (const Task& t : p.tasks)
      for (const Scalar& k : t.consts) extreme_const |= detail::extreme_scalar(k);
    if (const uint8_t real = detail::genuine(f, ops, inputs, extreme_const)) detail::note_fp(real, std::move(ops));
  }
  results->clear();
  for (const trace::Program::Result& r : p.results) {
    View v;
    v.buffer = mem[r.slot];
    v.dtype = r.dtype;
    const trace::Slot& s = p.slots[r.slot];
    v.offset = r.offset + (s.kind == trace::Slot::Kind::Arg ? args.at(static_cast<size_t>(s.arg)).offset : 0);
    v.shape = r.shape;
    v.strides = r.strides;
    v.readonly = r.readonly;
    results->push_back(std::move(v));
  }
  return true;
}

}  // namespace nf::pipeline
