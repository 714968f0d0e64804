// The C++ type of each DType, for the routines of this folder: f(T{}) with T
// the element type (bool for Bool, std::complex for the complex types).
#pragma once

#include <complex>
#include <cstdint>
#include <stdexcept>

#include "core/dtype.h"

namespace nf::ext {

template <typename F>
void with_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(bool{});
    case DType::Int8: return f(int8_t{});
    case DType::Int16: return f(int16_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt8: return f(uint8_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::UInt64: return f(uint64_t{});
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Complex64: return f(std::complex<float>{});
    case DType::Complex128: return f(std::complex<double>{});
  }
  throw std::logic_error("unknown dtype");
}

template <typename T>
inline constexpr bool is_complex_v = false;
template <typename T>
inline constexpr bool is_complex_v<std::complex<T>> = true;

}  // namespace nf::ext
