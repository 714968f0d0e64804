// A vector that keeps its first N elements inline, for any element type:
// a task's inputs, constants and expression nodes. Recording or running one
// small operation then touches the heap only for its result's memory.
#pragma once

#include <algorithm>
#include <cstring>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace nf {

template <typename T, size_t N>
class InlineVector {
 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  InlineVector() = default;
  InlineVector(std::initializer_list<T> l) {
    reserve(l.size());
    for (const T& v : l) push_back(v);
  }
  InlineVector(const InlineVector& o) {
    reserve(o.size_);
    for (const T& v : o) push_back(v);
  }
  InlineVector(InlineVector&& o) noexcept { take(std::move(o)); }
  InlineVector& operator=(const InlineVector& o) {
    if (this != &o) {
      clear();
      reserve(o.size_);
      for (const T& v : o) push_back(v);
    }
    return *this;
  }
  InlineVector& operator=(InlineVector&& o) noexcept {
    if (this != &o) {
      destroy();
      take(std::move(o));
    }
    return *this;
  }
  InlineVector& operator=(std::initializer_list<T> l) {
    clear();
    reserve(l.size());
    for (const T& v : l) push_back(v);
    return *this;
  }
  ~InlineVector() { destroy(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_ ? heap_ : reinterpret_cast<T*>(inline_); }
  const T* data() const { return heap_ ? heap_ : reinterpret_cast<const T*>(inline_); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  // Writes the elements' bytes at p, returning p past them (trivially
  // copyable T). Small inline storage is copied whole (a fixed-size copy, no
  // call), so p must have room for max(size(), N) elements; the bytes past
  // size() are garbage. (Storage always holds N elements: heap blocks are larger.)
  char* write_to(char* p) const
    requires std::is_trivially_copyable_v<T>
  {
    if (N * sizeof(T) <= 128 && size_ <= N) {
      std::memcpy(p, data(), N * sizeof(T));
    } else {
      std::memcpy(p, data(), size_ * sizeof(T));
    }
    return p + size_ * sizeof(T);
  }

  void reserve(size_t n) {
    if (n <= capacity()) return;
    T* p = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    T* old = data();
    for (size_t i = 0; i < size_; ++i) {
      new (p + i) T(std::move(old[i]));
      old[i].~T();
    }
    if (heap_) ::operator delete(heap_, std::align_val_t(alignof(T)));
    heap_ = p;
    cap_ = n;
  }
  __attribute__((always_inline)) void push_back(const T& v) { emplace_back(v); }
  __attribute__((always_inline)) void push_back(T&& v) { emplace_back(std::move(v)); }
  // Inlined at every call (the growing path is not): an element built from
  // values the caller has in registers is stored from them. Out of line, a
  // small element built on the caller's stack (an ExprNode) was reloaded
  // whole right after being stored in pieces, a store-forwarding stall.
  template <typename... A>
  __attribute__((always_inline)) T& emplace_back(A&&... a) {
    if (size_ == capacity()) [[unlikely]]
      return grow_and_emplace(std::forward<A>(a)...);
    return *new (data() + size_++) T(std::forward<A>(a)...);
  }
  void pop_back() { data()[--size_].~T(); }
  void clear() {
    T* d = data();
    for (size_t i = 0; i < size_; ++i) d[i].~T();
    size_ = 0;
  }
  void resize(size_t n) {
    while (size_ > n) pop_back();
    reserve(n);
    while (size_ < n) emplace_back();
  }

 private:
  size_t capacity() const { return heap_ ? cap_ : N; }
  template <typename... A>
  __attribute__((noinline)) T& grow_and_emplace(A&&... a) {
    T tmp(std::forward<A>(a)...);  // the argument may live in this vector
    reserve(std::max<size_t>(2 * capacity(), N + 1));
    return *new (data() + size_++) T(std::move(tmp));
  }
  void destroy() {
    clear();
    if (heap_) ::operator delete(heap_, std::align_val_t(alignof(T)));
    heap_ = nullptr;
    cap_ = 0;
  }
  void take(InlineVector&& o) {
    if (o.heap_) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      size_ = o.size_;
      o.heap_ = nullptr;
      o.cap_ = 0;
      o.size_ = 0;
      return;
    }
    if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) * N <= 256) {
      // A fixed-size copy of the whole inline storage (inlined vector moves).
      std::memcpy(static_cast<void*>(inline_), o.inline_, sizeof(inline_));
      size_ = o.size_;
      o.size_ = 0;
      return;
    }
    T* src = o.data();
    for (size_t i = 0; i < o.size_; ++i) {
      new (reinterpret_cast<T*>(inline_) + i) T(std::move(src[i]));
      src[i].~T();
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  size_t size_ = 0;
  size_t cap_ = 0;
  T* heap_ = nullptr;
  alignas(T) unsigned char inline_[N * sizeof(T)];  // (bytes: copying unset ones is defined)
};

}  // namespace nf
