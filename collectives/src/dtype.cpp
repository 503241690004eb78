#include "rocebench/collectives/dtype.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__)
// The sums in 256-bit vectors (AVX2; F16C for float16), chosen at run time so the binary still
// runs on any x86-64. The compiler cannot vectorise the portable loops above:
// without F16C every float16 conversion is a library call (~1000x slower than memcpy), and the
// bfloat16 rounding branch keeps that loop scalar (~20x). Results are bit-identical to them:
// F16C rounds to nearest even, and the bfloat16 rounding below is float_to_bfloat16's.
__attribute__((target("avx2,f16c"))) std::size_t sum_half_avx2(std::uint16_t* d, const std::uint16_t* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i)));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(_mm256_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}

// bfloat16 → float32 is a 16-bit shift: interleaving zeros below each element does it, 16
// elements at a time, and packing the rounded high halves back undoes the interleaving exactly.
__attribute__((target("avx2"))) inline __m256i round_to_bfloat16_bits(__m256 sum) {
  const __m256i bits = _mm256_castps_si256(sum);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i quiet_nan = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
  return _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet_nan, nan), 16);
}

__attribute__((target("avx2"))) std::size_t sum_bfloat16_avx2(std::uint16_t* d, const std::uint16_t* s, std::size_t n) {
  const __m256i zero = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256 lo = _mm256_add_ps(_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, a)),
                                    _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, b)));
    const __m256 hi = _mm256_add_ps(_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, a)),
                                    _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, b)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm256_packus_epi32(round_to_bfloat16_bits(lo), round_to_bfloat16_bits(hi)));
  }
  return i;
}

// float32 in 256-bit vectors (the portable build is limited to SSE2's 128).
__attribute__((target("avx2"))) void sum_float_avx2(float* __restrict d, const float* __restrict s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] += s[i];
}

bool has_avx2_f16c() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return yes;
}
#endif

// dst += src: the vector loop where the CPU has one, the portable loop for the rest.
void sum_float(void* dst, const void* src, std::size_t count) {
#if defined(__x86_64__)
  if (has_avx2_f16c()) return sum_float_avx2(static_cast<float*>(dst), static_cast<const float*>(src), count);
#endif
  combine_native<float>(dst, src, count, [](float a, float b) { return a + b; });
}

void sum_16bit(bool half, void* dst, const void* src, std::size_t count) {
  std::size_t done = 0;
#if defined(__x86_64__)
  if (has_avx2_f16c()) {
    auto* d = static_cast<std::uint16_t*>(dst);
    const auto* s = static_cast<const std::uint16_t*>(src);
    done = half ? sum_half_avx2(d, s, count) : sum_bfloat16_avx2(d, s, count);
  }
#endif
  combine_16bit(half, static_cast<std::uint16_t*>(dst) + done, static_cast<const std::uint16_t*>(src) + done,
                count - done, [](float a, float b) { return a + b; });
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
  if (op != ReduceOp::max && t == DataType::float32) {
    sum_float(dst, src, count);
  } else if (op != ReduceOp::max && (t == DataType::float16 || t == DataType::bfloat16)) {
    sum_16bit(t == DataType::float16, dst, src, count);
  } else if (op == ReduceOp::max) {
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
