// A vector with inline storage, for shapes, strides and other small
// metadata: recording an operation must not touch the heap for them. Only for
// trivially copyable element types (copies are memcpy); above N elements the
// storage moves to the heap.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>
#include <vector>

namespace nf {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable elements only");

 public:
  SmallVector() = default;
  explicit SmallVector(size_t n, T v = T()) { resize(n, v); }
  SmallVector(std::initializer_list<T> l) {
    reserve(l.size());
    for (const T& v : l) push_back(v);
  }
  template <typename It>
    requires(!std::is_integral_v<It>)
  SmallVector(It b, It e) {
    for (; b != e; ++b) push_back(*b);
  }
  SmallVector(const SmallVector& o) { assign(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o);
    return *this;
  }
  SmallVector(SmallVector&& o) noexcept { take(o); }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_ ? heap_ : inline_; }
  const T* data() const { return heap_ ? heap_ : inline_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity()) return;
    T* p = static_cast<T*>(std::malloc(n * sizeof(T)));
    if (!p) throw std::bad_alloc();
    std::memcpy(static_cast<void*>(p), data(), size_ * sizeof(T));
    if (heap_) std::free(heap_);
    heap_ = p;
    cap_ = n;
  }
  void push_back(const T& v) {
    if (size_ == capacity()) {
      const T copy = v;  // v may live in this vector
      reserve(std::max<size_t>(2 * capacity(), N + 1));
      data()[size_++] = copy;
      return;
    }
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  void resize(size_t n, T v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = v;
    size_ = n;
  }
  void clear() { size_ = 0; }
  void insert(size_t pos, const T& v) {
    const T copy = v;
    push_back(copy);
    T* d = data();
    std::memmove(static_cast<void*>(d + pos + 1), d + pos, (size_ - 1 - pos) * sizeof(T));
    d[pos] = copy;
  }
  void erase(size_t pos) {
    T* d = data();
    std::memmove(static_cast<void*>(d + pos), d + pos + 1, (size_ - 1 - pos) * sizeof(T));
    --size_;
  }
  // The n elements at p (not in this vector).
  void assign(const T* p, size_t n) {
    size_ = 0;
    reserve(n);
    std::memcpy(static_cast<void*>(data()), p, n * sizeof(T));
    size_ = n;
  }
  // Writes the elements' bytes at p, returning p past them. Inline storage
  // is copied whole (a fixed-size copy, no loop or call), so p must have
  // room for max(size(), N) elements; the bytes past size() are garbage.
  char* write_to(char* p) const {
    if (kWholeCopy && size_ <= N) {
      std::memcpy(p, data(), sizeof(inline_));  // (storage holds N elements: see assign)
    } else {
      std::memcpy(p, data(), size_ * sizeof(T));
    }
    return p + size_ * sizeof(T);
  }
  bool operator==(const SmallVector& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const SmallVector& o) const { return !(*this == o); }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

 private:
  size_t capacity() const { return heap_ ? cap_ : N; }
  void release() {
    if (heap_) std::free(heap_);  // (not a call per move and destruction of inline storage)
    heap_ = nullptr;
    cap_ = 0;
    size_ = 0;
  }
  // Inline storage is copied whole (a fixed-size copy the compiler inlines:
  // a few vector moves instead of a memcpy call per shape or stride).
  static constexpr bool kWholeCopy = sizeof(T) * N <= 128;
  void assign(const SmallVector& o) {
    size_ = 0;
    if (kWholeCopy && o.size_ <= N && !heap_) {
      // o's storage (inline, or a heap block of more than N) holds N elements.
      std::memcpy(static_cast<void*>(inline_), o.data(), sizeof(inline_));
    } else {
      reserve(o.size_);
      std::memcpy(static_cast<void*>(data()), o.data(), o.size_ * sizeof(T));
    }
    size_ = o.size_;
  }
  void take(SmallVector& o) {
    if (o.heap_) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      o.heap_ = nullptr;
      o.cap_ = 0;
    } else if constexpr (kWholeCopy) {
      std::memcpy(static_cast<void*>(inline_), o.inline_, sizeof(inline_));
    } else {
      std::memcpy(static_cast<void*>(inline_), o.inline_, o.size_ * sizeof(T));
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  size_t size_ = 0;
  size_t cap_ = 0;
  T* heap_ = nullptr;
  T inline_[N]{};  // value-initialized: whole copies of inline storage copy set values
};

}  // namespace nf
