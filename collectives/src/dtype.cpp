#include "rocebench/collectives/dtype.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "rocebench/common/errors.hpp"

namespace rocebench::collectives {

std::size_t size_of(DataType t) {
  switch (t) {
    case DataType::float32: return 4;
    case DataType::float16:
    case DataType::bfloat16: return 2;
    case DataType::float64: return 8;
  }
  return 0;
}

std::string to_string(DataType t) {
  switch (t) {
    case DataType::float32: return "float32";
    case DataType::float16: return "float16";
    case DataType::bfloat16: return "bfloat16";
    case DataType::float64: return "float64";
  }
  return "?";
}

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
  }
  return "?";
}

DataType parse_dtype(const std::string& name) {
  for (auto t : {DataType::float32, DataType::float16, DataType::bfloat16, DataType::float64}) {
    if (to_string(t) == name) return t;
  }
  throw InputError("unknown dtype '" + name + "' (float32, float16, bfloat16, float64)");
}

ReduceOp parse_op(const std::string& name) {
  for (auto op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max}) {
    if (to_string(op) == name) return op;
  }
  throw InputError("unknown reduction '" + name + "' (sum, avg, max)");
}

std::uint16_t float_to_half(float f) { return std::bit_cast<std::uint16_t>(static_cast<_Float16>(f)); }
float half_to_float(std::uint16_t h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }

std::uint16_t float_to_bfloat16(float f) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest, ties to even
  return static_cast<std::uint16_t>(bits >> 16);
}

float bfloat16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

namespace {

// The loops are kept plain so the compiler vectorises them (this file is built with -O3).
template <typename T, typename Combine>
void combine_native(void* __restrict dst, const void* __restrict src, std::size_t count, Combine combine) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  for (std::size_t i = 0; i < count; ++i) d[i] = combine(d[i], s[i]);
}

template <typename Combine>
void combine_16bit(bool half, void* __restrict dst, const void* __restrict src, std::size_t count, Combine combine) {
  auto* d = static_cast<std::uint16_t*>(dst);
  const auto* s = static_cast<const std::uint16_t*>(src);
  if (half) {
    auto* dh = reinterpret_cast<_Float16*>(d);
    const auto* sh = reinterpret_cast<const _Float16*>(s);
    for (std::size_t i = 0; i < count; ++i) {
      dh[i] = static_cast<_Float16>(combine(static_cast<float>(dh[i]), static_cast<float>(sh[i])));
    }
  } else {
    for (std::size_t i = 0; i < count; ++i) d[i] = float_to_bfloat16(combine(bfloat16_to_float(d[i]), bfloat16_to_float(s[i])));
  }
}

template <typename Combine>
void combine_any(DataType t, void* dst, const void* src, std::size_t count, Combine combine) {
  switch (t) {
    case DataType::float32: return combine_native<float>(dst, src, count, combine);
    case DataType::float64: return combine_native<double>(dst, src, count, combine);
    case DataType::float16: return combine_16bit(true, dst, src, count, combine);
    case DataType::bfloat16: return combine_16bit(false, dst, src, count, combine);
  }
}

}  // namespace

void reduce_into(DataType t, ReduceOp op, void* dst, const void* src, std::size_t count) {
  if (op == ReduceOp::max) {
    combine_any(t, dst, src, count, [](auto a, auto b) { return a > b ? a : b; });
  } else {
    combine_any(t, dst, src, count, [](auto a, auto b) { return a + b; });
  }
}

double load(DataType t, const void* data, std::size_t i) {
  switch (t) {
    case DataType::float32: return static_cast<const float*>(data)[i];
    case DataType::float64: return static_cast<const double*>(data)[i];
    case DataType::float16: return half_to_float(static_cast<const std::uint16_t*>(data)[i]);
    case DataType::bfloat16: return bfloat16_to_float(static_cast<const std::uint16_t*>(data)[i]);
  }
  return 0;
}

void store(DataType t, void* data, std::size_t i, double value) {
  switch (t) {
    case DataType::float32: static_cast<float*>(data)[i] = static_cast<float>(value); return;
    case DataType::float64: static_cast<double*>(data)[i] = value; return;
    case DataType::float16: static_cast<std::uint16_t*>(data)[i] = float_to_half(static_cast<float>(value)); return;
    case DataType::bfloat16: static_cast<std::uint16_t*>(data)[i] = float_to_bfloat16(static_cast<float>(value)); return;
  }
}

void finish_average(DataType t, void* data, std::size_t count, int ranks) {
  for (std::size_t i = 0; i < count; ++i) store(t, data, i, load(t, data, i) / ranks);
}

}  // namespace rocebench::collectives
