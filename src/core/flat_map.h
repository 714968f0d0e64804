// A map for the handful of keys a fusion group touches (its buffers): a
// flat list searched in order. For a few entries it beats a hash map, whose
// node per key was the most frequent allocation of a window's analysis.
// Insertion order is iteration order.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace nf {

template <typename K, typename V>
class FlatMap {
 public:
  using Entry = std::pair<K, V>;
  explicit FlatMap(size_t reserve = 4) { entries_.reserve(reserve); }
  V* find(const K& k) {
    for (Entry& e : entries_)
      if (e.first == k) return &e.second;
    return nullptr;
  }
  const V* find(const K& k) const {
    for (const Entry& e : entries_)
      if (e.first == k) return &e.second;
    return nullptr;
  }
  bool count(const K& k) const { return find(k) != nullptr; }
  V& operator[](const K& k) {
    if (V* v = find(k)) return *v;
    return entries_.emplace_back(k, V{}).second;
  }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
};

}  // namespace nf
