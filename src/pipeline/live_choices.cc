// Choices measured on live runs (tuning.h): recompute or store
// (RecomputeChoice) and multi-stage launches (LaunchTuning).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "pipeline/tuning.h"
#include "tune/tune.h"

namespace nf::pipeline::detail {

namespace {
// The store's launch entries hold a choice by key: this one's keys start so.
constexpr const char* kStoreKey = "recompute or store\n";
constexpr const char* kSizeClass = "window";  // (one class: the key holds the sizes)
std::string device() { return tune::device_id(cpu_target().machine()); }
}  // namespace

uint64_t stable_window_hash(const std::vector<Task>& window) {
  std::string bytes;
  Structure one;
  for (const Task& t : window) {
    one.clear();
    one.append(t);
    const size_t at = bytes.size();
    bytes.append(one.view());
    std::memset(&bytes[at + Task::kHeadBytes - sizeof t.name], 0, sizeof t.name);  // (name ends the head)
    bytes += t.name;
    bytes += '\n';
  }
  return jit::hash64(bytes);
}

namespace {
// What was measured is forgotten with the store's entries (resets): a
// cleared store tunes afresh.
template <typename Table>
void forget_on_reset(Table& table, uint64_t& seen) {
  const uint64_t r = tune::ScheduleStore::instance().resets();
  if (r != seen || table.size() >= 4096) table.clear();  // (or a program whose windows never repeat)
  seen = r;
}
}  // namespace

std::shared_ptr<LaunchTuning> launch_tuning(const std::string& chain_key, const std::string& size_class) {
  static std::unordered_map<std::string, std::shared_ptr<LaunchTuning>> table;  // guarded by the flush lock
  static uint64_t seen = 0;
  forget_on_reset(table, seen);
  std::string key = chain_key + '\t' + size_class;
  std::shared_ptr<LaunchTuning>& t = table[key];
  if (t) return t;
  t = std::make_shared<LaunchTuning>();
  t->key = chain_key;
  t->size_class = size_class;
  int k = -1;
  bool ours = false;
  if (tune::ScheduleStore::instance().find_launch(device(), chain_key, size_class, &k, &ours) && k >= 0 &&
      k < LaunchTuning::kCandidates) {
    t->chosen = k;
    t->from_store = !ours;
  }
  return t;
}

void LaunchTuning::record(int c, double ms) {
  if (c < 0 || chosen >= 0) return;
  best_ms[c] = launches < kCandidates ? ms : std::min(best_ms[c], ms);
  if (++launches == 2 * kCandidates) {
    chosen = static_cast<int>(std::min_element(std::begin(best_ms), std::end(best_ms)) - best_ms);
    tune::ScheduleStore::instance().put_launch(device(), key, size_class, chosen, best_ms[chosen] / 1e3,
                                               best_ms[0] / 1e3, 2 * kCandidates);
  }
}

RecomputeChoice& recompute_choice(std::string_view structure, const std::vector<Task>& window) {
  // (By the structure's hash: two structures that share one only share a
  // timing choice, never a plan.)
  static std::unordered_map<size_t, RecomputeChoice> choices;  // guarded by the flush lock
  static uint64_t seen = 0;
  forget_on_reset(choices, seen);
  const size_t h = std::hash<std::string_view>{}(structure);
  if (auto it = choices.find(h); it != choices.end()) return it->second;
  RecomputeChoice& c = choices[h];
  // (The hash covers every task's domain: the key tells sizes apart.)
  c.key = kStoreKey + std::to_string(stable_window_hash(window));
  int k = -1;
  bool ours = false;
  if (tune::ScheduleStore::instance().find_launch(device(), c.key, kSizeClass, &k, &ours) && (k == 0 || k == 1)) {
    c.chosen = k;
    c.from_store = !ours;
  }
  return c;
}

void RecomputeChoice::record(int w, bool memo_hit, double ms) {
  if (chosen >= 0) return;
  ++runs;
  if (memo_hit) {
    best_ms[w] = measured[w] ? std::min(best_ms[w], ms) : ms;
    ++measured[w];
  }
  if (measured[0] >= kRuns && measured[1] >= kRuns) {
    chosen = best_ms[1] < best_ms[0] ? 1 : 0;
    tune::ScheduleStore::instance().put_launch(device(), key, kSizeClass, chosen, best_ms[chosen] / 1e3,
                                               best_ms[0] / 1e3, measured[0] + measured[1]);
  } else if (runs >= kMaxRuns) {
    chosen = 0;  // (no memoized runs to compare: the model's way)
  }
}

std::string RecomputeChoice::describe(int w) const {
  const char* const how[] = {"recomputed", "stored"};
  if (chosen < 0)
    return std::string("recompute or store being tuned: run ") + std::to_string(runs) + ", this one " + how[w] +
           " (each way measured on " + std::to_string(kRuns) + " runs that compile nothing)";
  // (A choice read from the store applies from the window's first run on;
  // only the run whose measurement decides ran the other way.)
  const std::string now = w == chosen ? "" : std::string(" (from the next run on; this one ") + how[w] + ")";
  if (from_store)
    return std::string("recompute or store tuned by an earlier run (from the schedule store): ") + how[chosen] + now;
  if (measured[0] < kRuns || measured[1] < kRuns)
    return std::string("recompute or store: ") + how[chosen] + " (no runs that compile nothing to measure)" + now;
  char ratio[96];
  std::snprintf(ratio, sizeof ratio, " (its fastest run took %.2fx the fastest %s run)",
                best_ms[chosen] / best_ms[1 - chosen], how[1 - chosen]);
  return std::string("recompute or store tuned on its first ") + std::to_string(measured[0] + measured[1]) +
         " measured runs: " + how[chosen] + ratio + now;
}

}  // namespace nf::pipeline::detail
