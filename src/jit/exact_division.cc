// Exact division by a loop-invariant divisor with fused multiply-adds (see
// exact_division.h for the algorithm and why it is exact).
#include "jit/exact_division.h"

#include <cmath>
#include <map>
#include <vector>

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

#include "core/checks.h"

namespace nf::jit {
namespace {

std::atomic<int64_t> rewritten{0};

// The format's precision and exponent range (binary64 or binary32).
struct Format {
  int p, emin, emax;
  unsigned bits;
};

// What every division by one divisor shares, computed where it is defined.
// Where c is outside 2^(emin+20) <= |c| <= 2^(emax-20), no lane takes the
// fast path: the bounds then admit no dividend (lo_bits above every
// magnitude's bits, span 0; no magnitude equals `zero`), and the values
// below are computed from c = 1 (so that nothing here raises a
// floating-point exception NumPy's division would not: 1/0, 1/subnormal).
struct Divisor {
  llvm::Value* c;        // c, or 1 where c is outside the range
  llvm::Value* y;        // RN(1/c)
  llvm::Value* ny;       // -RN(1/c)
  llvm::Value* lo_bits;  // the bits of 2^(emin+2p+2) * max(1, |c|)
  llvm::Value* span;     // bits(2^(emax-4) * min(|c|, 8)) - lo_bits
  // The magnitude bits admitted besides [lo, hi]: 0 (a zero dividend) for
  // a positive c in range, else all ones (none; see rewrite()).
  llvm::Value* zero;
  // c is +-2^k within the range (a scalar i1): y is exact, and x * y is
  // RN(x/c) for every x -- the same real number, rounded once -- with the
  // same floating-point exceptions, so no check is needed.
  llvm::Value* pow2;
};

// The bits of |v|.
llvm::Value* magnitude(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Type* it, const Format& f) {
  return b.CreateAnd(b.CreateBitCast(v, it), llvm::ConstantInt::get(it, ~uint64_t{0} >> (65 - f.bits)));
}

// `mag - lo <=u hi - lo`: lo <= |v| <= hi for non-negative bounds, NaN and
// infinities outside (their bits are above every finite number's).
llvm::Value* in_range(llvm::IRBuilder<>& b, llvm::Value* mag, llvm::Value* lo_bits, llvm::Value* span) {
  return b.CreateICmpULE(b.CreateSub(mag, lo_bits), span);
}

llvm::Constant* pow2(llvm::Type* t, int e) { return llvm::ConstantFP::get(t, std::ldexp(1.0, e)); }

// The integer type of t's bits (a vector of them for a vector t).
llvm::Type* int_type(llvm::Type* t, unsigned bits) {
  llvm::Type* i = llvm::IntegerType::get(t->getContext(), bits);
  if (auto* v = llvm::dyn_cast<llvm::VectorType>(t)) return llvm::VectorType::get(i, v->getElementCount());
  return i;
}

Divisor prepare(llvm::IRBuilder<>& b, llvm::Value* c, const Format& f) {
  llvm::Type* t = c->getType();
  llvm::Type* it = int_type(t, f.bits);
  auto bits_of = [&](llvm::Value* v) { return b.CreateBitCast(v, it); };
  llvm::Value* c_lo = bits_of(pow2(t, f.emin + 20));
  llvm::Value* c_span = b.CreateSub(bits_of(pow2(t, f.emax - 20)), c_lo);
  llvm::Value* ok = in_range(b, magnitude(b, c, it, f), c_lo, c_span);
  Divisor d;
  d.c = b.CreateSelect(ok, c, llvm::ConstantFP::get(t, 1.0));
  d.y = b.CreateFDiv(llvm::ConstantFP::get(t, 1.0), d.c);
  d.ny = b.CreateFNeg(d.y);
  llvm::Value* ac = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d.c);
  // x within [2^(emin+2p+2) max(1, |c|), 2^(emax-4) min(|c|, 8)] keeps x,
  // x/c and every nonzero residual (at least |x| 2^(2-2p)) in the normal
  // range -- so a flush-to-zero mode changes nothing -- and x/c at most
  // 2^(emax-4): exact products by powers of two, no rounding slop.
  llvm::Value* lo = b.CreateFMul(pow2(t, f.emin + 2 * f.p + 2),
                                 b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, ac, llvm::ConstantFP::get(t, 1.0)));
  llvm::Value* hi = b.CreateFMul(pow2(t, f.emax - 4),
                                 b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, ac, llvm::ConstantFP::get(t, 8.0)));
  llvm::Value* lo_bits = bits_of(lo);
  d.lo_bits = b.CreateSelect(ok, lo_bits, llvm::Constant::getAllOnesValue(it));
  d.span = b.CreateSelect(ok, b.CreateSub(bits_of(hi), lo_bits), llvm::Constant::getNullValue(it));
  llvm::Value* positive = b.CreateICmpSGT(bits_of(c), llvm::Constant::getNullValue(it));
  d.zero = b.CreateSelect(b.CreateAnd(ok, positive), llvm::Constant::getNullValue(it),
                          llvm::Constant::getAllOnesValue(it));
  llvm::Value* fraction = b.CreateAnd(bits_of(c), llvm::ConstantInt::get(it, (uint64_t{1} << (f.p - 1)) - 1));
  d.pow2 = b.CreateAnd(ok, b.CreateICmpEQ(fraction, llvm::Constant::getNullValue(it)));
  if (t->isVectorTy()) d.pow2 = b.CreateAndReduce(d.pow2);  // (a splat: every lane is the same)
  return d;
}

// Where a divisor's shared values go: right after its definition (it
// dominates every division by it), or at the entry for arguments and
// constants.
llvm::BasicBlock::iterator after_definition(llvm::Value* c, llvm::Function& fn) {
  if (auto* i = llvm::dyn_cast<llvm::Instruction>(c)) {
    if (llvm::isa<llvm::PHINode>(i)) return i->getParent()->getFirstInsertionPt();
    return std::next(i->getIterator());
  }
  return fn.getEntryBlock().getFirstInsertionPt();
}

bool format_of(llvm::Type* t, Format& f) {
  llvm::Type* s = t->getScalarType();
  if (s->isDoubleTy()) f = {53, -1022, 1023, 64};
  else if (s->isFloatTy()) f = {24, -126, 127, 32};
  else return false;
  return !llvm::isa<llvm::ScalableVectorType>(t);
}

void rewrite(llvm::BinaryOperator* div, const Divisor& d, const Format& f, llvm::LoopInfo& li) {
  llvm::IRBuilder<> b(div);
  llvm::Value* x = div->getOperand(0);
  llvm::Type* t = div->getType();
  llvm::Type* it = int_type(t, f.bits);
  llvm::MDBuilder md(div->getContext());
  // A power of two (a mean over 1024 elements, a Jacobi update's / 4): the
  // product by its exact reciprocal (a branch on a value the loop does not
  // change, taken the same way every time).
  llvm::Instruction* mul_term = nullptr;
  llvm::Instruction* other_term = nullptr;
  llvm::SplitBlockAndInsertIfThenElse(d.pow2, div->getIterator(), &mul_term, &other_term, nullptr, nullptr, &li);
  llvm::BasicBlock* join = div->getParent();
  b.SetInsertPoint(mul_term);
  llvm::Value* product = b.CreateFMul(x, d.y);
  div->moveBefore(other_term);
  b.SetInsertPoint(div);
  llvm::Value* mag = magnitude(b, x, it, f);
  llvm::Value* fails = b.CreateAnd(b.CreateNot(in_range(b, mag, d.lo_bits, d.span)),
                                   b.CreateICmpNE(mag, d.zero));
  llvm::Value* any = t->isVectorTy() ? b.CreateOrReduce(fails) : fails;
  llvm::MDNode* likely = md.createBranchWeights(1, 1u << 20);
  llvm::Instruction* then_term = nullptr;
  llvm::Instruction* else_term = nullptr;
  llvm::SplitBlockAndInsertIfThenElse(any, div->getIterator(), &then_term, &else_term, likely, nullptr, &li);
  llvm::BasicBlock* tail = div->getParent();
  div->moveBefore(then_term);  // any lane failed: the true division
  // Every lane passed (fused operations, one rounding each):
  //   q0 = RN(x y);  r0 = fma(q0, c, -x);  q1 = fma(r0, -y, q0)   (q1 faithful)
  //   r1 = fma(q1, c, -x);  q2 = fma(r1, -y, q1)                 (q2 = RN(x/c))
  // r = q c - x is Markstein's residual negated (exact, where the bounds
  // hold) and q + r (-y) the same sum as q + (x - q c) y. Negating x (an
  // fma's operand) is exact; no fma's result is negated, which a backend
  // may move onto the fma's operands, not the same for a zero sum. A zero
  // x (admitted where c > 0) gives r = +0 (q c and -x are zeros of
  // opposite signs) and q + (+0)(-y) = q + (-0) = q: the zero quotient
  // keeps x y's sign, x/c's. (With c < 0 the correction would add +0 and
  // turn a -0 quotient into +0: there zeros take the true division.)
  b.SetInsertPoint(else_term);
  auto fma = [&](llvm::Value* p, llvm::Value* q, llvm::Value* r) {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, q, r});
  };
  llvm::Value* nx = b.CreateFNeg(x);
  llvm::Value* q0 = b.CreateFMul(x, d.y);
  llvm::Value* q1 = fma(fma(q0, d.c, nx), d.ny, q0);
  llvm::Value* q2 = fma(fma(q1, d.c, nx), d.ny, q1);
  b.SetInsertPoint(tail, tail->begin());
  llvm::PHINode* quotient = b.CreatePHI(t, 2);
  quotient->addIncoming(div, then_term->getParent());
  quotient->addIncoming(q2, else_term->getParent());
  b.SetInsertPoint(join, join->begin());
  llvm::PHINode* phi = b.CreatePHI(t, 2);
  phi->addIncoming(product, mul_term->getParent());
  phi->addIncoming(quotient, tail);
  div->replaceUsesWithIf(phi, [&](llvm::Use& u) { return u.getUser() != quotient; });
  rewritten.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

int64_t exact_divisions_rewritten() { return rewritten.load(std::memory_order_relaxed); }

llvm::PreservedAnalyses ExactDivisionPass::run(llvm::Function& fn, llvm::FunctionAnalysisManager& fam) {
  llvm::LoopInfo& li = fam.getResult<llvm::LoopAnalysis>(fn);
  // The divisions to rewrite, all found before any block is split.
  std::vector<llvm::BinaryOperator*> found;
  for (llvm::BasicBlock& bb : fn) {
    const llvm::Loop* loop = li.getLoopFor(&bb);
    if (!loop) continue;  // run once: nothing to amortize the reciprocal over
    for (llvm::Instruction& i : bb) {
      auto* div = llvm::dyn_cast<llvm::BinaryOperator>(&i);
      Format f;
      if (!div || div->getOpcode() != llvm::Instruction::FDiv || !format_of(div->getType(), f)) continue;
      if (div->hasAllowReciprocal() || div->hasApproxFunc()) continue;  // not NumPy's division
      llvm::Value* c = div->getOperand(1);
      const bool invariant = llvm::isa<llvm::Argument>(c) ||
                             (llvm::isa<llvm::Constant>(c) && !llvm::isa<llvm::ConstantExpr>(c)) ||
                             (llvm::isa<llvm::Instruction>(c) && !loop->contains(llvm::cast<llvm::Instruction>(c)));
      if (invariant) found.push_back(div);
    }
  }
  if (found.empty()) return llvm::PreservedAnalyses::all();
  std::map<llvm::Value*, Divisor> divisors;
  for (llvm::BinaryOperator* div : found) {
    Format f;
    format_of(div->getType(), f);
    llvm::Value* c = div->getOperand(1);
    auto at = divisors.find(c);
    if (at == divisors.end()) {
      llvm::IRBuilder<> b(fn.getContext());
      b.SetInsertPoint(after_definition(c, fn));
      at = divisors.emplace(c, prepare(b, c, f)).first;
    }
    rewrite(div, at->second, f, li);
  }
  // With the core's checks on (core/checks.h): the function is still
  // well-formed IR (dominance of the divisor's values, the phis of the split
  // blocks).
  if (checks_on() && llvm::verifyFunction(fn, &llvm::errs()))
    llvm::report_fatal_error("ExactDivisionPass left malformed IR");
  return llvm::PreservedAnalyses::none();
}

}  // namespace nf::jit
