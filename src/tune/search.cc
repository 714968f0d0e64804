// The auto-tuner's search loop (see tune.h).
#include <chrono>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "tune/tune.h"

namespace nf::tune {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

enum Technique { kRandom = 0, kMutateBest = 1, kAnneal = 2, kTechniques = 3 };

}  // namespace

SearchResult search(const mdh::MdHom& h, const mdh::Bindings& b, const Asm& target, const Evaluate& eval,
                    const SearchOptions& opt) {
  const double inf = std::numeric_limits<double>::infinity();
  const double t0 = now_s();
  std::mt19937_64 rng(opt.seed);
  SearchResult res;
  res.pulls.assign(kTechniques, 0);
  res.wins.assign(kTechniques, 0);
  res.best_s = inf;
  res.default_s = inf;
  std::unordered_set<std::string> seen;

  auto out_of_budget = [&] {
    if (opt.stop && opt.stop->load()) return true;
    if (opt.max_evals > 0 && res.evals >= opt.max_evals) return true;
    return now_s() - t0 >= opt.budget_s;
  };
  auto report = [&] {
    res.elapsed_s = now_s() - t0;
    if (!opt.progress) return;
    SearchProgress p;
    p.evals = res.evals;
    p.max_evals = opt.max_evals;
    p.elapsed_s = res.elapsed_s;
    p.budget_s = opt.budget_s;
    p.default_s = res.default_s;
    p.best_s = res.best_s;
    opt.progress(p);
  };
  // Evaluates a schedule once (by key); returns its time, inf on failure.
  auto try_schedule = [&](const Schedule& s) {
    if (!seen.insert(s.key()).second) return -1.0;  // already measured
    ++res.evals;
    double t = inf;
    try {
      t = eval(s, res.best_s);
    } catch (const std::exception& e) {
      ++res.failures;
      if (res.errors.size() < 5) res.errors.push_back(s.key() + ": " + e.what());
    }
    if (t < res.best_s) {
      res.best_s = t;
      res.best = s;
    }
    report();
    return t;
  };

  // Baselines: the default schedule, then the routine and the generated
  // default where the routine applies.
  res.initial = default_schedule(h, b, target, opt.routines);
  res.default_s = try_schedule(res.initial);
  if (!(res.default_s < inf)) {
    // The default must work; without it there is nothing to compare to.
    res.best = res.initial;
    res.elapsed_s = now_s() - t0;
    return res;
  }
  if (opt.routines && blas_compatible(h)) {
    Schedule blas;
    blas.routine = Routine::Blas;
    if (!out_of_budget()) try_schedule(blas);
    if (!out_of_budget()) try_schedule(default_schedule(h, b, target, false));
  }
  for (const Schedule& s : opt.starts)
    if (!out_of_budget() && s.legal(h) && (opt.routines || s.routine == Routine::None)) try_schedule(s);

  // Annealing walker, starting from the default (in log-time units).
  Schedule walk = res.best;
  double walk_s = res.best_s;
  const double temp0 = 0.3;
  std::vector<double> reward(kTechniques, 0.0);
  int pulls = 0, stale = 0;
  while (!out_of_budget() && stale < 200) {
    // UCB1 over the techniques (each tried once first).
    int arm = -1;
    double score = -1;
    for (int k = 0; k < kTechniques; ++k) {
      if (res.pulls[k] == 0) {
        arm = k;
        break;
      }
      const double s = reward[k] / res.pulls[k] + std::sqrt(2.0 * std::log(pulls + 1.0) / res.pulls[k]);
      if (s > score) score = s, arm = k;
    }
    Schedule cand;
    switch (arm) {
      case kRandom:
        cand = random_schedule(h, b, target, rng(), opt.routines);
        break;
      case kMutateBest: {
        cand = res.best;
        const int moves = 1 + static_cast<int>(rng() % 3);
        for (int m = 0; m < moves; ++m) cand = mutate(cand, h, b, target, rng(), opt.routines);
        break;
      }
      default:
        cand = mutate(walk, h, b, target, rng(), opt.routines);
    }
    const double before = res.best_s;
    const double t = try_schedule(cand);
    if (t < 0) {  // a duplicate: no credit, no cost
      ++stale;
      continue;
    }
    stale = 0;
    ++pulls;
    ++res.pulls[arm];
    double r = 0;
    if (t < before * 0.99) {
      r = 1;
      ++res.wins[arm];
    }
    if (arm == kAnneal && t < inf) {
      const double progress = std::min(1.0, (now_s() - t0) / std::max(opt.budget_s, 1e-9));
      const double temp = std::max(1e-3, temp0 * (1 - progress));
      const double delta = std::log(t / walk_s);
      std::uniform_real_distribution<double> u(0, 1);
      if (delta < 0 || u(rng) < std::exp(-delta / temp)) {
        if (delta < 0) r = std::max(r, 0.5);
        walk = cand;
        walk_s = t;
      }
    }
    reward[arm] += r;
  }
  // Confirmation: a winner picked from one noisy measurement each must beat
  // the default again, measured alternately, by more than the noise margin;
  // otherwise the default stays (tuning never makes a kernel slower).
  if (res.best.key() != res.initial.key() && res.best_s < inf && opt.confirm_rounds > 0) {
    double d = inf, w = inf;  // fresh measurements only: the first one of the winner was its luckiest
    for (int round = 0; round < opt.confirm_rounds; ++round) {
      try {
        d = std::min(d, eval(res.initial, inf));
        w = std::min(w, eval(res.best, inf));
      } catch (const std::exception&) {
        break;
      }
    }
    if (d < inf) res.default_s = d;
    if (w < res.default_s * (1 - opt.confirm_margin)) {
      res.best_s = w;
    } else {
      res.best = res.initial;
      res.best_s = res.default_s;
    }
  }
  res.elapsed_s = now_s() - t0;
  return res;
}

}  // namespace nf::tune
