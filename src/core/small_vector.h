// A vector with inline storage, for shapes and strides: recording an operation
// must not touch the heap for its metadata.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

namespace nf {

template <typename T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  explicit SmallVector(size_t n, T v = T()) { resize(n, v); }
  SmallVector(std::initializer_list<T> l) {
    for (const T& v : l) push_back(v);
  }
  template <typename It>
    requires(!std::is_integral_v<It>)
  SmallVector(It b, It e) {
    for (; b != e; ++b) push_back(*b);
  }
  SmallVector(const SmallVector& o) { *this = o; }
  SmallVector& operator=(const SmallVector& o) {
    if (this == &o) return *this;
    size_ = o.size_;
    if (size_ <= N) {
      std::copy(o.inline_, o.inline_ + size_, inline_);
      if (!heap_.empty()) heap_.clear();
    } else {
      heap_ = o.heap_;
    }
    return *this;
  }
  SmallVector(SmallVector&& o) noexcept { *this = std::move(o); }
  SmallVector& operator=(SmallVector&& o) noexcept {
    size_ = o.size_;
    if (size_ <= N) {
      std::copy(o.inline_, o.inline_ + size_, inline_);
      if (!heap_.empty()) heap_.clear();
    } else {
      heap_ = std::move(o.heap_);
    }
    o.size_ = 0;
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return size_ <= N ? inline_ : heap_.data(); }
  const T* data() const { return size_ <= N ? inline_ : heap_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(const T& v) {
    if (size_ < N) {
      inline_[size_++] = v;
      return;
    }
    if (size_ == N) heap_.assign(inline_, inline_ + N);
    heap_.push_back(v);
    ++size_;
  }
  void pop_back() {
    if (size_ > N) {
      heap_.pop_back();
      if (size_ - 1 == N) {
        std::copy(heap_.begin(), heap_.end(), inline_);
        heap_.clear();
      }
    }
    --size_;
  }
  void resize(size_t n, T v = T()) {
    while (size_ > n) pop_back();
    while (size_ < n) push_back(v);
  }
  void clear() {
    size_ = 0;
    heap_.clear();
  }
  void insert(size_t pos, const T& v) {
    push_back(v);
    for (size_t i = size_ - 1; i > pos; --i) (*this)[i] = (*this)[i - 1];
    (*this)[pos] = v;
  }
  void erase(size_t pos) {
    for (size_t i = pos; i + 1 < size_; ++i) (*this)[i] = (*this)[i + 1];
    pop_back();
  }
  bool operator==(const SmallVector& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const SmallVector& o) const { return !(*this == o); }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

 private:
  size_t size_ = 0;
  T inline_[N] = {};
  std::vector<T> heap_;
};

}  // namespace nf
