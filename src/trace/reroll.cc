// Rerolling a capture into a Program (trace.h).
#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "trace/trace.h"

namespace nf::trace {

namespace {

// ---------------------------------------------------------------------------
// The marks as a tree of loops over the task sequence.

struct LoopNode;
struct Node {
  int64_t task = -1;                 // a task, or
  std::shared_ptr<LoopNode> loop;    // a marked loop
};
struct Iter {
  int64_t a = 0, b = 0;  // its tasks: [a, b)
  std::vector<Node> nodes;
};
struct LoopNode {
  int64_t id = 0;
  std::vector<Iter> iters;
};

// The tasks and marks as a tree; false when the marks do not nest (the
// caller then ignores them).
bool build_tree(int64_t ntasks, const std::vector<Mark>& marks, std::vector<Node>& top) {
  struct Open {
    std::shared_ptr<LoopNode> loop;
    std::vector<Node>* before;  // the sequence holding the loop
  };
  std::vector<Open> stack;
  auto current = [&]() -> std::vector<Node>& {
    if (stack.empty()) return top;
    LoopNode& l = *stack.back().loop;
    return l.iters.empty() ? *stack.back().before : l.iters.back().nodes;
  };
  auto close_top = [&](int64_t at) {
    LoopNode& l = *stack.back().loop;
    if (!l.iters.empty()) l.iters.back().b = at;
    stack.pop_back();
  };
  auto find = [&](int64_t id) {
    for (size_t k = stack.size(); k-- > 0;)
      if (stack[k].loop->id == id) return static_cast<int64_t>(k);
    return int64_t{-1};
  };
  // What runs after a loop began and before its first iteration (an
  // iterator's own work) runs before the loop: it goes before the loop's
  // node in the sequence holding it.
  auto emit = [&](Node n) -> std::vector<Node>& {
    if (!stack.empty() && stack.back().loop->iters.empty()) {
      std::vector<Node>& seq = *stack.back().before;
      auto at = seq.end();
      while (at != seq.begin() && (at - 1)->loop != stack.back().loop) --at;
      seq.insert(at == seq.begin() ? seq.end() : at - 1, std::move(n));
      return seq;
    }
    current().push_back(std::move(n));
    return current();
  };
  size_t m = 0;
  for (int64_t t = 0; t <= ntasks; ++t) {
    for (; m < marks.size() && marks[m].at == t; ++m) {
      const Mark& mk = marks[m];
      switch (mk.kind) {
        case MarkKind::LoopBegin: {
          auto l = std::make_shared<LoopNode>();
          l->id = mk.loop;
          std::vector<Node>& seq = emit({-1, l});
          stack.push_back({l, &seq});
          break;
        }
        case MarkKind::IterBegin: {
          const int64_t k = find(mk.loop);
          if (k < 0) return false;
          while (static_cast<int64_t>(stack.size()) > k + 1) close_top(mk.at);
          LoopNode& l = *stack.back().loop;
          if (!l.iters.empty()) l.iters.back().b = mk.at;
          l.iters.push_back({mk.at, mk.at, {}});
          break;
        }
        case MarkKind::LoopEnd: {
          const int64_t k = find(mk.loop);
          if (k < 0) break;  // (a loop that ended already)
          while (static_cast<int64_t>(stack.size()) > k) close_top(mk.at);
          break;
        }
      }
    }
    if (t < ntasks) emit({t, nullptr});
  }
  while (!stack.empty()) close_top(ntasks);
  return true;
}

// ---------------------------------------------------------------------------
// Memory: every buffer the tasks touch is a memory object; rerolling a loop
// merges the objects an iteration makes for itself (one per position) into
// one (union-find).

struct Mem {
  const Buffer* buffer = nullptr;  // a buffer; nullptr: a loop's merged temporaries
  BufferPtr keep;
  int parent = -1;  // -1: a representative
  int64_t first = std::numeric_limits<int64_t>::max(), last = -1;  // tasks touching it
  int64_t nbytes = 0;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();  // elements touched
  bool temp = false;  // made by the capture and not written in Python: may be an iteration's own
  DType dtype = DType::Float64;  // as the tasks view it
};

class Reroller {
 public:
  Reroller(Program& p, uint32_t epoch, const std::vector<View>& args, const std::vector<View>& results,
           const std::unordered_map<const Buffer*, int>& params)
      : p_(p), epoch_(epoch), params_(params) {
    for (const View& a : args) arg_buffers_.push_back(a.buffer.get());
    // Which tasks touch each buffer, and where: known for the whole trace
    // before any loop is rerolled.
    for (int64_t t = 0; t < static_cast<int64_t>(p_.tasks.size()); ++t) {
      const Task& task = p_.tasks[t];
      auto touch = [&](const View& v) {
        Mem& m = mems_[mem_of(v.buffer)];
        m.dtype = v.dtype;
        m.first = std::min(m.first, t);
        m.last = std::max(m.last, t);
        if (v.size() > 0) {
          m.lo = std::min(m.lo, v.lo());
          m.hi = std::max(m.hi, v.hi());
        }
      };
      for (const View& v : task.inputs) touch(v);
      touch(task.output);
    }
    // What the call returns outlives every iteration.
    for (const View& v : results) mems_[mem_of(v.buffer)].temp = false;
  }

  int mem_of(const BufferPtr& b) {
    auto it = index_.find(b.get());
    if (it != index_.end()) return it->second;
    Mem m;
    m.buffer = b.get();
    m.keep = b;
    m.nbytes = b->nbytes();
    const bool is_arg = std::find(arg_buffers_.begin(), arg_buffers_.end(), b.get()) != arg_buffers_.end();
    m.temp = !is_arg && b->capture_epoch() == epoch_ && !b->allocated() && !params_.count(b.get());
    mems_.push_back(std::move(m));
    index_[b.get()] = static_cast<int>(mems_.size()) - 1;
    return static_cast<int>(mems_.size()) - 1;
  }
  int find(int x) {
    while (mems_[x].parent >= 0) {
      const int p = mems_[x].parent;
      if (mems_[p].parent >= 0) mems_[x].parent = mems_[p].parent;
      x = p;
    }
    return x;
  }
  // A new representative for `members` (representatives).
  int merge(const std::vector<int>& members) {
    Mem m;
    m.temp = true;
    if (!members.empty()) m.dtype = mems_[members[0]].dtype;
    for (int x : members) {
      m.first = std::min(m.first, mems_[x].first);
      m.last = std::max(m.last, mems_[x].last);
      m.nbytes = std::max(m.nbytes, mems_[x].nbytes);
      m.lo = std::min(m.lo, mems_[x].lo);
      m.hi = std::max(m.hi, mems_[x].hi);
    }
    mems_.push_back(m);
    const int id = static_cast<int>(mems_.size()) - 1;
    for (int x : members) mems_[x].parent = id;
    return id;
  }

  Item leaf(int64_t t) {
    const Task& task = p_.tasks[t];
    Item it;
    Op& op = it.op;
    op.task = &task;
    for (int64_t e : task.domain) op.extents.push_back({e, {}});
    auto access = [&](const View& v) {
      Op::Access a;
      a.slot = mem_of(v.buffer);
      a.offset = {v.offset, {}};
      for (int64_t s : v.strides) a.strides.push_back({s, {}});
      op.views.push_back(std::move(a));
    };
    for (const View& v : task.inputs) access(v);
    access(task.output);
    for (const Scalar& c : task.consts)
      if (!is_inexact(c.dtype)) op.ints.push_back({c.as_int64(), {}});
    for (const IndexFn& f : task.indices) {
      op.index_offsets.push_back({f.offset, {}});
      std::vector<Aff> s;
      for (int64_t x : f.strides) s.push_back({x, {}});
      op.index_strides.push_back(std::move(s));
    }
    return it;
  }

  std::vector<Item> sequence(const std::vector<Node>& nodes) {
    std::vector<Item> out;
    for (const Node& n : nodes) {
      if (n.loop) {
        for (Item& i : reroll(*n.loop)) out.push_back(std::move(i));
      } else {
        out.push_back(leaf(n.task));
      }
    }
    return out;
  }

 private:
  Program& p_;
  uint32_t epoch_;
  const std::unordered_map<const Buffer*, int>& params_;  // a parameter's memory -> its argument
  std::vector<const Buffer*> arg_buffers_;
  std::vector<Mem> mems_;
  std::unordered_map<const Buffer*, int> index_;
  std::deque<Task> synthetic_;  // the carries' copies (Op::task points here until build keeps them)
  std::map<std::vector<int64_t>, std::shared_ptr<const std::vector<int64_t>>> tables_;

 public:
  // What an iteration's items are, for comparing iterations: their
  // structure and memory (`key`), their numbers (`nums`, the Affs'
  // offsets in walk order) and the memory objects they make for
  // themselves (`locals`, in order of first use).
  struct Shape {
    std::string key;
    std::vector<int64_t> nums;
    std::vector<uint8_t> tab;  // per num: whether its Aff may take a table (tables())
    std::vector<int> locals;   // representatives, in order of first use
    std::vector<std::pair<int, int>> carried;  // (ordinal, representative) of the previous block's locals it reads
    int64_t a = 0, b = 0;      // its tasks
  };
  // `prev`: the shape of the block before it in the loop (its locals are
  // what this block may read as carried values: 'P'), or null.
  Shape shape(const std::vector<Item>& items, int64_t a, int64_t b, const Shape* prev) {
    Shape s;
    s.a = a;
    s.b = b;
    std::string& key = s.key;  // (appended to: a shape is computed for every iteration of every loop)
    key.reserve(512);
    auto num = [&](int64_t x) {
      char buf[24];
      key.append(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
    };
    std::unordered_map<int, int> ordinal;
    // (strides stay affine: a table is an extent, an offset, a constant or a trip)
    auto aff = [&](const Aff& f, bool tableable) {
      s.nums.push_back(f.c);
      s.tab.push_back(tableable && !f.table);
      key += '[';
      for (int64_t x : f.k) {
        num(x);
        key += ',';
      }
      if (f.table) {
        key += 'T';
        num(reinterpret_cast<intptr_t>(f.table.get()));
        key += '@';
        num(f.td);
      }
      key += ']';
    };
    auto ref = [&](int mem) {
      const int r = find(mem);
      const Mem& m = mems_[r];
      if (m.temp && m.first >= a && m.first < b) {
        auto [it, fresh] = ordinal.try_emplace(r, static_cast<int>(s.locals.size()));
        if (fresh) s.locals.push_back(r);
        key += 'L';
        num(it->second);
        key += ';';
        return;
      }
      if (prev && m.temp && m.first >= prev->a && m.first < prev->b) {
        const auto at = std::find(prev->locals.begin(), prev->locals.end(), r);
        if (at != prev->locals.end()) {
          const int q = static_cast<int>(at - prev->locals.begin());
          if (std::find(s.carried.begin(), s.carried.end(), std::make_pair(q, r)) == s.carried.end())
            s.carried.push_back({q, r});
          key += 'P';
          num(q);
          key += ';';
          return;
        }
      }
      key += 'E';
      num(r);
      key += ';';
    };
    std::function<void(const std::vector<Item>&)> walk = [&](const std::vector<Item>& items) {
      for (const Item& i : items) {
        if (i.loop) {
          key += "loop{";
          aff(i.trip, true);
          walk(i.body);
          key += '}';
          continue;
        }
        const Op& op = i.op;
        const Task& t = *op.task;
        key += "op(";
        structure(t, key);
        key += ')';
        for (const Aff& e : op.extents) aff(e, true);
        for (const Op::Access& v : op.views) {
          ref(v.slot);
          aff(v.offset, true);
          for (const Aff& x : v.strides) aff(x, false);
        }
        for (const Aff& x : op.ints) aff(x, true);
        for (size_t f = 0; f < op.index_offsets.size(); ++f) {
          aff(op.index_offsets[f], true);
          for (const Aff& x : op.index_strides[f]) aff(x, false);
        }
      }
    };
    walk(items);
    std::sort(s.carried.begin(), s.carried.end());
    return s;
  }

  // Every Aff of `items` in walk order (as shape() visits them).
  static void each_aff(std::vector<Item>& items, const std::function<void(Aff&)>& f) {
    for (Item& i : items) {
      if (i.loop) {
        f(i.trip);
        each_aff(i.body, f);
        continue;
      }
      Op& op = i.op;
      for (Aff& e : op.extents) f(e);
      for (Op::Access& v : op.views) {
        f(v.offset);
        for (Aff& x : v.strides) f(x);
      }
      for (Aff& x : op.ints) f(x);
      for (size_t k = 0; k < op.index_offsets.size(); ++k) {
        f(op.index_offsets[k]);
        for (Aff& x : op.index_strides[k]) f(x);
      }
    }
  }

  // Appends to s the task's fields rerolling must see equal (its numbers aside).
  static void structure(const Task& t, std::string& s) {
    s.append(static_cast<const char*>(t.head_bytes()), Task::kHeadBytes);
    s += t.name;
    s += '|';
    auto put = [&](const void* p, size_t n) { s.append(static_cast<const char*>(p), n); };
    const int rank = static_cast<int>(t.domain.size());
    put(&rank, sizeof rank);
    const int nin = static_cast<int>(t.inputs.size());
    put(&nin, sizeof nin);
    for (const ExprNode& n : t.expr.nodes) put(&n, sizeof n);
    s += '|';
    for (const Scalar& c : t.consts) {
      put(&c.dtype, sizeof c.dtype);
      if (is_inexact(c.dtype)) {
        put(&c.f, sizeof c.f);
        put(&c.im, sizeof c.im);
      }
    }
    for (const View& v : t.inputs) put(&v.dtype, sizeof v.dtype);
    put(&t.output.dtype, sizeof t.output.dtype);
    const int nidx = static_cast<int>(t.indices.size());
    put(&nidx, sizeof nidx);
  }

  // A marked loop as runs: blocks of p consecutive iterations (p = 1, or up
  // to 4 for bodies that alternate, as red-black sweeps do) of the same
  // key whose numbers move by the same step from block to block, each run
  // one loop whose body is a block. At every point the period covering the
  // most iterations wins (the smaller on a tie). A block may read what the
  // block before it made (a name rebound every iteration: x = f(x)): the
  // run's loop keeps those values in a carry, one allocation per value,
  // copied from the block's own at the end of its body.
  std::vector<Item> reroll(const LoopNode& l) {
    const size_t n = l.iters.size();
    std::vector<std::vector<Item>> items(n);
    for (size_t j = 0; j < n; ++j) items[j] = sequence(l.iters[j].nodes);
    std::vector<Shape> shapes(n);
    for (size_t j = 0; j < n; ++j) shapes[j] = shape(items[j], l.iters[j].a, l.iters[j].b, j ? &shapes[j - 1] : nullptr);
    auto block = [&](size_t j, size_t p) {
      std::vector<Item> b;
      for (size_t q = j; q < j + p; ++q) b.insert(b.end(), items[q].begin(), items[q].end());
      return b;
    };
    auto block_shape = [&](size_t j, size_t p, const Shape* prev) {
      return p == 1 ? shapes[j] : shape(block(j, p), l.iters[j].a, l.iters[j + p - 1].b, prev);
    };
    struct Run {
      size_t s = 0, p = 1;
      std::vector<Shape> blocks;
      std::vector<int64_t> step;
      std::vector<uint8_t> tabled;  // per num: its values are a table (they do not move affinely)
    };
    // The blocks of period p from s, as far as they form a run; with
    // `tables`, numbers that do not move affinely (where their Aff may
    // take a table) do not end it: the run's loop reads them from a table.
    auto run = [&](size_t s, size_t p, bool tables) {
      Run r;
      r.s = s;
      r.p = p;
      Shape before;
      const bool has_before = s >= p;
      if (has_before && p > 1) before = shape(block(s - p, p), l.iters[s - p].a, l.iters[s - 1].b, nullptr);
      r.blocks.push_back(block_shape(s, p, has_before ? (p == 1 ? &shapes[s - 1] : &before) : nullptr));
      for (size_t j = s + p; j + p <= n; j += p) {
        Shape next = block_shape(j, p, &r.blocks.back());
        if (next.key != r.blocks[0].key) break;
        const int64_t m = static_cast<int64_t>(r.blocks.size());
        if (m == 1) {
          r.step.resize(next.nums.size());
          r.tabled.assign(next.nums.size(), 0);
          for (size_t k = 0; k < r.step.size(); ++k) r.step[k] = next.nums[k] - r.blocks[0].nums[k];
        } else {
          bool fits = true;
          std::vector<size_t> newly;
          for (size_t k = 0; k < r.step.size() && fits; ++k)
            if (!r.tabled[k] && next.nums[k] != r.blocks[0].nums[k] + m * r.step[k]) {
              if (tables && r.blocks[0].tab[k])
                newly.push_back(k);
              else
                fits = false;
            }
          if (!fits) break;
          for (size_t k : newly) r.tabled[k] = 1;
        }
        // What the block before made may be read by this one (a carry), not later.
        bool escapes = false;
        for (int x : r.blocks.back().locals) escapes |= mems_[x].last >= next.b;
        if (escapes) break;
        r.blocks.push_back(std::move(next));
      }
      r.step.resize(r.blocks[0].nums.size(), 0);
      r.tabled.resize(r.blocks[0].nums.size(), 0);
      return r;
    };
    auto runs_of = [&](bool tables) {
      std::vector<Run> runs;
      for (size_t s = 0; s < n;) {
        Run best = run(s, 1, tables);
        if (best.blocks.size() < n - s)
          for (size_t p = 2; p <= 4 && s + 2 * p <= n; ++p) {
            Run r = run(s, p, tables);
            if (r.blocks.size() >= 2 && r.blocks.size() * p > best.blocks.size() * best.p) best = std::move(r);
          }
        s += best.blocks.size() * best.p;
        runs.push_back(std::move(best));
      }
      return runs;
    };
    // Affine runs where they cover the loop in a few small ones; tables
    // where they do not (the iterations' numbers do not move affinely: a
    // loop of many runs, or of long periods that only happen to repeat),
    // if tables make a program a third the size or less.
    std::vector<Run> runs = runs_of(false);
    auto size = [&](const std::vector<Run>& rs) {
      size_t ops = 0;
      for (const Run& r : rs)
        for (size_t q = r.s; q < r.s + r.p; ++q) ops += items[q].size();
      return ops;
    };
    constexpr size_t kAffineRuns = 3;
    if (runs.size() > kAffineRuns || std::any_of(runs.begin(), runs.end(), [](const Run& r) { return r.p > 1; })) {
      std::vector<Run> tabled = runs_of(true);
      if ((runs.size() > kAffineRuns && tabled.size() < runs.size()) || 3 * size(tabled) <= size(runs))
        runs = std::move(tabled);
    }
    std::vector<Item> out;
    for (Run& r : runs) {
      std::vector<Item> body = r.p == 1 ? std::move(items[r.s]) : block(r.s, r.p);
      if (body.empty()) continue;
      const Shape& first = r.blocks[0];
      const int64_t end = r.blocks.back().b;
      // One memory object per position of the blocks' own temporaries.
      std::vector<int> local(first.locals.size());
      for (size_t q = 0; q < first.locals.size(); ++q) {
        std::vector<int> members;
        for (const Shape& b : r.blocks) members.push_back(b.locals[q]);
        local[q] = merge(members);
      }
      Item loop;
      loop.loop = true;
      loop.trip = {static_cast<int64_t>(r.blocks.size()), {}};
      loop.body = std::move(body);
      size_t k = 0;
      each_aff(loop.body, [&](Aff& f) {
        const size_t at = k++;
        if (f.table) ++f.td;  // (its loop is one deeper now)
        std::vector<int64_t> nk{r.tabled[at] ? 0 : r.step[at]};
        nk.insert(nk.end(), f.k.begin(), f.k.end());
        while (!nk.empty() && nk.back() == 0) nk.pop_back();
        f.k = std::move(nk);
        if (r.tabled[at]) {
          std::vector<int64_t> values;
          values.reserve(r.blocks.size());
          for (const Shape& b : r.blocks) values.push_back(b.nums[at]);
          f.table = intern(std::move(values));
          f.td = 0;
          f.c = 0;
        }
      });
      // Carried values: what the first block reads of the block before the
      // run is that block's memory made the carry; each block then copies
      // its own value into the carry at its end.
      // (A run of one block reads the block before it where it is.)
      for (const auto& [q, before] : r.blocks.size() > 1 ? first.carried : std::vector<std::pair<int, int>>{}) {
        const int br = find(before);
        if (mems_[br].last >= end)
          throw Unsupported("a value one iteration makes is used after the iteration that follows it");
        const int carry = merge({br});
        mems_[carry].last = std::max(mems_[carry].last, end - 1);
        mems_[carry].nbytes = std::max(mems_[carry].nbytes, mems_[local[q]].nbytes);
        loop.body.push_back(copy(local[q], carry));
      }
      out.push_back(std::move(loop));
    }
    return out;
  }

  // One object per table content (Aff::table).
  std::shared_ptr<const std::vector<int64_t>> intern(std::vector<int64_t>&& values) {
    auto [it, fresh] = tables_.try_emplace(values, nullptr);
    if (fresh) it->second = std::make_shared<const std::vector<int64_t>>(std::move(values));
    return it->second;
  }

  // An item copying all of memory object `from` into `to` (same dtype).
  Item copy(int from, int to) {
    const DType t = mems_[from].dtype;
    const int64_t count = mems_[from].nbytes / itemsize(t);
    Task& task = synthetic_.emplace_back();
    task.kind = Task::Kind::Map;
    task.name = "carry";
    task.domain = {count};
    View v;
    v.dtype = t;
    v.shape = {count};
    v.strides = {1};
    task.inputs.push_back(v);
    task.output = v;
    task.expr.input(0, t);
    mems_[to].dtype = t;
    Item it;
    it.op.task = &task;
    it.op.extents = {Aff{count, {}}};
    it.op.views = {Op::Access{from, {}, {Aff{1, {}}}}, Op::Access{to, {}, {Aff{1, {}}}}};
    return it;
  }

  // Program slots for the representatives, and the accesses pointed at them.
  void assign_slots(std::vector<Item>& items, const std::vector<View>& args) {
    std::function<void(std::vector<Item>&)> walk = [&](std::vector<Item>& items) {
      for (Item& i : items) {
        if (i.loop) {
          walk(i.body);
          continue;
        }
        const Task& t = *i.op.task;
        for (size_t v = 0; v < i.op.views.size(); ++v) {
          const View& tv = v < t.inputs.size() ? t.inputs[v] : t.output;
          Op::Access& a = i.op.views[v];
          a.slot = slot_of(find(a.slot), tv.dtype, args);
          if (p_.slots[a.slot].kind == Slot::Kind::Arg) a.offset.c -= p_.slots[a.slot].arg_offset;
        }
      }
    };
    walk(items);
  }

  int slot_of(int rep, DType dtype, const std::vector<View>& args) {
    auto it = slot_index_.find(rep);
    if (it != slot_index_.end()) {
      Slot& s = p_.slots[it->second];
      if (s.dtype != dtype)
        throw Unsupported("it views one array's memory as two dtypes (" + std::string(dtype_name(s.dtype)) + ", " +
                          dtype_name(dtype) + ")");
      return it->second;
    }
    Mem& m = mems_[rep];
    Slot s;
    s.dtype = dtype;
    s.nbytes = m.nbytes;
    if (!m.buffer) {
      s.kind = Slot::Kind::Temp;
    } else if (auto pa = params_.find(m.buffer); pa != params_.end()) {
      s.kind = Slot::Kind::Param;
      s.arg = pa->second;
    } else {
      int arg = -1;
      for (size_t k = 0; k < args.size() && arg < 0; ++k)
        if (args[k].buffer.get() == m.buffer) arg = static_cast<int>(k);
      if (arg >= 0) {
        s.kind = Slot::Kind::Arg;
        s.arg = arg;
        s.arg_offset = args[arg].offset;
        if (args[arg].dtype != dtype)
          throw Unsupported("it views an argument's memory as another dtype (" + std::string(dtype_name(dtype)) + ")");
        if (m.hi >= m.lo) {
          s.lo = m.lo - s.arg_offset;
          s.hi = m.hi - s.arg_offset;
        }
      } else if (m.buffer->capture_epoch() != epoch_) {
        s.kind = Slot::Kind::External;
        s.buffer = m.keep;
      } else if (m.buffer->allocated()) {
        s.kind = Slot::Kind::Constant;
        s.bytes.assign(static_cast<const char*>(m.keep->data()), static_cast<size_t>(m.nbytes));
      } else {
        s.kind = Slot::Kind::Temp;
      }
    }
    p_.slots.push_back(std::move(s));
    const int id = static_cast<int>(p_.slots.size()) - 1;
    slot_index_[rep] = id;
    return id;
  }

  int result_slot(const View& v, const std::vector<View>& args) {
    const int rep = find(mem_of(v.buffer));
    return slot_of(rep, v.dtype, args);
  }

 private:
  std::unordered_map<int, int> slot_index_;
};

// The constants that are parameters (Scalar::param, core/capture.h) become
// inputs: each reads a one-element memory slot per (argument, dtype) that a
// run fills with the call's value. Sets p.params and p.fixed_params;
// `memory` gets the slots' buffers.
void take_params(Program& p, const std::vector<CaptureParam>& conv, std::unordered_map<const Buffer*, int>& memory) {
  std::vector<char> placed(conv.size(), 0), bad(conv.size(), 0);
  std::map<std::pair<int, DType>, BufferPtr> buffers;
  for (Task& t : p.tasks) {
    for (size_t c = 0; c < t.consts.size(); ++c) {
      Scalar& k = t.consts[c];
      if (k.param == 0) continue;
      const size_t serial = k.param - 1;
      k.param = 0;
      if (serial >= conv.size()) continue;
      placed[serial] = 1;
      // (initial= is a reduction's start, not an expression node.)
      if (t.init_const == static_cast<int32_t>(c) || is_complex(k.dtype) || k.dtype == DType::Bool) {
        bad[serial] = 1;
        continue;
      }
      int input = -1;
      for (ExprNode& n : t.expr.nodes) {
        if (n.kind != ExprNode::Kind::Const || n.a != static_cast<int32_t>(c)) continue;
        if (n.dtype != k.dtype) {
          bad[serial] = 1;
          continue;
        }
        if (input < 0) {
          BufferPtr& b = buffers[{conv[serial].index, k.dtype}];
          if (!b) {
            b = Buffer::make(itemsize(k.dtype));
            memory[b.get()] = conv[serial].index;
          }
          View v;
          v.buffer = b;
          v.dtype = k.dtype;
          v.shape = t.domain;
          v.strides = Dims(t.domain.size(), 0);
          v.readonly = true;
          input = static_cast<int>(t.inputs.size());
          t.inputs.push_back(std::move(v));
        }
        n.kind = ExprNode::Kind::Input;
        n.a = input;
      }
    }
  }
  std::set<int> read, fixed;
  for (size_t s = 0; s < conv.size(); ++s) {
    // A conversion that reached no expression (a value computed at the
    // call, an integer made of it) or was dropped: the value is baked in.
    if (!placed[s] || bad[s] || conv[s].dropped) fixed.insert(conv[s].index);
  }
  for (const auto& [key, b] : buffers) read.insert(key.first);
  p.params.assign(read.begin(), read.end());
  p.fixed_params.assign(fixed.begin(), fixed.end());
}

void count(const std::vector<Item>& items, int depth, Program& p) {
  p.depth = std::max(p.depth, depth);
  for (const Item& i : items) {
    if (i.loop) {
      ++p.loops;
      count(i.body, depth + 1, p);
    } else {
      ++p.ops;
    }
  }
}

void describe_items(std::ostringstream& os, const std::vector<Item>& items, int depth) {
  auto aff = [](const Aff& f) {
    std::string s = std::to_string(f.c);
    for (size_t d = 0; d < f.k.size(); ++d)
      if (f.k[d] != 0) s += (f.k[d] > 0 ? " + " : " - ") + std::to_string(std::abs(f.k[d])) + "*i" + std::to_string(d);
    if (f.table) s += " + slot" + std::to_string(f.tslot) + "[i" + std::to_string(f.td) + "]";
    return s;
  };
  for (const Item& i : items) {
    os << std::string(2 * depth + 2, ' ');
    if (i.loop) {
      os << "for i" << depth << " in range(" << aff(i.trip) << "):\n";
      describe_items(os, i.body, depth + 1);
      continue;
    }
    const Task& t = *i.op.task;
    os << t.name << (t.kind == Task::Kind::Reduce ? " (reduce)" : "") << " over (";
    for (size_t d = 0; d < i.op.extents.size(); ++d) os << (d ? ", " : "") << aff(i.op.extents[d]);
    os << ") -> slot " << i.op.views.back().slot << "\n";
  }
}

}  // namespace

std::string Program::describe() const {
  std::ostringstream os;
  os << traced_tasks << " operations traced, " << ops << " in the program, " << loops << " loops (depth " << depth
     << "), " << slots.size() << " memory slots\n";
  describe_items(os, items, 0);
  return os.str();
}

std::shared_ptr<Program> build(Captured&& c, const std::vector<View>& args, const std::vector<View>& results) {
  auto p = std::make_shared<Program>();
  p->tasks = std::move(c.tasks);
  p->traced_tasks = static_cast<int64_t>(p->tasks.size());
  // A program runs on one thread, without fusion: where the operations are
  // large, the ordinary path (fused kernels on every core) does better and
  // the interpreter's cost per operation is no longer what counts.
  constexpr int64_t kMaxMeanElements = 16384;
  int64_t elements = 0, contraction = 0;
  for (const Task& t : p->tasks) {
    elements += shape_size(t.domain);
    if (t.solo) contraction = std::max(contraction, shape_size(t.domain));
  }
  // A program's contractions are plain loops: one the size of a BLAS call
  // (NumPy's) is faster there.
  constexpr int64_t kMaxContraction = 16384;
  if (contraction >= kMaxContraction)
    throw Unsupported("it multiplies matrices large enough for BLAS (" + std::to_string(contraction) +
                      " multiply-adds in one product): the ordinary path calls BLAS");
  if (p->traced_tasks > 0 && elements / p->traced_tasks >= kMaxMeanElements)
    throw Unsupported("its operations are large (" + std::to_string(elements / p->traced_tasks) +
                      " elements on average): the ordinary path fuses them and runs them on every core");
  std::vector<Node> top;
  if (!build_tree(p->traced_tasks, c.marks, top)) {
    top.clear();
    for (int64_t t = 0; t < p->traced_tasks; ++t) top.push_back({t, nullptr});
  }
  std::unordered_map<const Buffer*, int> param_memory;
  take_params(*p, c.params, param_memory);
  Reroller r(*p, c.epoch, args, results, param_memory);
  p->items = r.sequence(top);
  r.assign_slots(p->items, args);
  // The tables' memory: one read-only External slot each, held by the program.
  std::map<const std::vector<int64_t>*, int> table_slot;
  Reroller::each_aff(p->items, [&](Aff& f) {
    if (!f.table) return;
    auto [it, fresh] = table_slot.try_emplace(f.table.get(), -1);
    if (fresh) {
      Slot s;
      s.kind = Slot::Kind::External;
      s.dtype = DType::Int64;
      s.nbytes = static_cast<int64_t>(f.table->size() * sizeof(int64_t));
      s.buffer = Buffer::make(std::max<int64_t>(s.nbytes, 8));
      std::memcpy(s.buffer->data(), f.table->data(), static_cast<size_t>(s.nbytes));
      p->slots.push_back(std::move(s));
      it->second = static_cast<int>(p->slots.size()) - 1;
    }
    f.tslot = it->second;
  });
  for (const View& v : results) {
    Program::Result res;
    res.slot = r.result_slot(v, args);
    res.dtype = v.dtype;
    res.offset = v.offset - (p->slots[res.slot].kind == Slot::Kind::Arg ? p->slots[res.slot].arg_offset : 0);
    res.shape = v.shape;
    res.strides = v.strides;
    res.readonly = v.readonly;
    p->results.push_back(std::move(res));
  }
  count(p->items, 0, *p);
  // A program is compiled as one function: one whose loops did not reroll
  // would take clang seconds to minutes (and run no faster than tier 0).
  constexpr int64_t kMaxOps = 512;
  if (p->ops > kMaxOps)
    throw Unsupported("its loops do not reroll into a program of at most " + std::to_string(kMaxOps) +
                      " operations (" + std::to_string(p->traced_tasks) + " traced, " + std::to_string(p->ops) +
                      " after rerolling)");
  // Keep only the tasks the program's operations describe, without their
  // memory (the arguments and temporaries of the traced call).
  std::vector<Task> kept;
  kept.reserve(static_cast<size_t>(p->ops));
  std::function<void(std::vector<Item>&)> keep = [&](std::vector<Item>& items) {
    for (Item& i : items) {
      if (i.loop) {
        keep(i.body);
        continue;
      }
      kept.push_back(*i.op.task);
      i.op.task = &kept.back();
    }
  };
  keep(p->items);
  for (Task& t : kept) {
    for (View& v : t.inputs) v.buffer.reset();
    t.output.buffer.reset();
  }
  p->tasks = std::move(kept);  // (the vector's storage moves: the pointers stay valid)
  return p;
}

}  // namespace nf::trace
