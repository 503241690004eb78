#include "rocebench/collectives/dtype.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
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

// IEEE binary16 by hand, as F16C converts: round to nearest even, NaNs quieted with their payload's top
// bits (clang 14, which builds the sanitized tests, has no _Float16 on x86).
std::uint16_t float_to_half(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000);
  const std::uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) return sign | 0x7e00 | static_cast<std::uint16_t>((magnitude >> 13) & 0x3ff);  // NaN
  if (magnitude >= 0x47800000) return sign | 0x7c00;  // 2^16 and beyond: infinity
  if (magnitude < 0x38800000) {  // below 2^-14: a subnormal half (or zero); adding 0.5 rounds it to 2^-24 steps
    const float aligned = std::bit_cast<float>(magnitude) + 0.5f;
    return sign | static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(aligned) - 0x3f000000);
  }
  // Rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even; a carry may reach infinity.
  const std::uint32_t rounded = magnitude - 0x38000000 + 0xfff + ((magnitude >> 13) & 1);
  return sign | static_cast<std::uint16_t>(rounded >> 13);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000 | (mantissa << 13) | (mantissa ? 0x400000 : 0));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

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
    for (std::size_t i = 0; i < count; ++i) d[i] = float_to_half(combine(half_to_float(d[i]), half_to_float(s[i])));
  } else {
    for (std::size_t i = 0; i < count; ++i) d[i] = float_to_bfloat16(combine(bfloat16_to_float(d[i]), bfloat16_to_float(s[i])));
  }
}

#if defined(__x86_64__)
// The sums in vectors, chosen at run time so the binary still runs on any x86-64: AVX-512 (32
// elements per iteration, the last partial one under a mask) where the CPU has it, else AVX2 +
// F16C (16 per iteration, a scalar tail). The compiler cannot vectorise the portable loops above:
// without F16C every float16 conversion is a library call (~1000x slower than memcpy), and the
// bfloat16 rounding branch keeps that loop scalar (~20x). Results are bit-identical to them:
// F16C rounds to nearest even, and the bfloat16 rounding below is float_to_bfloat16's.
__attribute__((target("avx2,f16c"))) inline void sum_half_8(std::uint16_t* d, const std::uint16_t* s) {
  const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d)));
  const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm256_cvtps_ph(_mm256_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx2,f16c"))) std::size_t sum_half_avx2(std::uint16_t* d, const std::uint16_t* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    sum_half_8(d + i, s + i);
    sum_half_8(d + i + 8, s + i + 8);
  }
  if (i + 8 <= n) {
    sum_half_8(d + i, s + i);
    i += 8;
  }
  return i;
}

// bfloat16 → float32 is a 16-bit shift: interleaving zeros below each element does it, and
// packing the rounded high halves back undoes the interleaving exactly (both work per 128-bit lane).
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

// The AVX-512 forms: one body per 32 elements, run under a full mask in the loop and a partial
// one for the last elements (masked lanes are neither read nor written), so every length runs here.
// GCC 12 takes the _mm512_undefined_*() inside its own intrinsics for uninitialised reads.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define ROCEBENCH_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))
ROCEBENCH_AVX512 inline __mmask32 first_lanes(std::size_t k) {
  return k >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << k) - 1);
}

ROCEBENCH_AVX512 inline void sum_half_32(std::uint16_t* d, const std::uint16_t* s, __mmask32 lanes) {
  for (int half = 0; half < 2; ++half) {
    const auto m = static_cast<__mmask16>(lanes >> (16 * half));
    const __m512 a = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, d + 16 * half));
    const __m512 b = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, s + 16 * half));
    _mm256_mask_storeu_epi16(d + 16 * half, m, _mm512_cvtps_ph(_mm512_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

ROCEBENCH_AVX512 inline __m512i round_to_bfloat16_bits(__m512 sum) {
  const __m512i bits = _mm512_castps_si512(sum);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  const __mmask16 nan = _mm512_cmp_ps_mask(sum, sum, _CMP_UNORD_Q);
  return _mm512_srli_epi32(_mm512_mask_or_epi32(rounded, nan, bits, _mm512_set1_epi32(0x00400000)), 16);
}

ROCEBENCH_AVX512 inline void sum_bfloat16_32(std::uint16_t* d, const std::uint16_t* s, __mmask32 lanes) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i a = _mm512_maskz_loadu_epi16(lanes, d);
  const __m512i b = _mm512_maskz_loadu_epi16(lanes, s);
  const __m512 lo = _mm512_add_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, a)),
                                  _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, b)));
  const __m512 hi = _mm512_add_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, a)),
                                  _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, b)));
  _mm512_mask_storeu_epi16(d, lanes, _mm512_packus_epi32(round_to_bfloat16_bits(lo), round_to_bfloat16_bits(hi)));
}

// bfloat16 with the CPU's own conversion (AVX512_BF16): vcvtne2ps2bf16 rounds to nearest even and
// quiets NaN as float_to_bfloat16 does, but flushes float32 denormals to zero, so a block with a
// denormal sum takes the integer rounding instead. Even elements widen by a shift, odd ones by
// clearing their low neighbour; one permute puts the two converted halves back in order.
#define ROCEBENCH_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,f16c")))
ROCEBENCH_AVX512_BF16 inline void sum_bfloat16_32_bf16(std::uint16_t* d, const std::uint16_t* s, __mmask32 lanes) {
  const __m512i a = _mm512_maskz_loadu_epi16(lanes, d);
  const __m512i b = _mm512_maskz_loadu_epi16(lanes, s);
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512 even = _mm512_add_ps(_mm512_castsi512_ps(_mm512_slli_epi32(a, 16)), _mm512_castsi512_ps(_mm512_slli_epi32(b, 16)));
  const __m512 odd = _mm512_add_ps(_mm512_castsi512_ps(_mm512_and_si512(a, high)), _mm512_castsi512_ps(_mm512_and_si512(b, high)));
  constexpr int kDenormal = 0x20;
  __m512i out;
  if (_mm512_fpclass_ps_mask(even, kDenormal) | _mm512_fpclass_ps_mask(odd, kDenormal)) {
    out = _mm512_or_si512(round_to_bfloat16_bits(even), _mm512_slli_epi32(round_to_bfloat16_bits(odd), 16));
  } else {
    const __m512i halves = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(odd, even));  // evens, then odds
    const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                           21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    out = _mm512_permutexvar_epi16(order, halves);
  }
  _mm512_mask_storeu_epi16(d, lanes, out);
}

enum class Block { half, bfloat16, bfloat16_instruction };

template <Block B>
ROCEBENCH_AVX512_BF16 inline void sum_32(std::uint16_t* d, const std::uint16_t* s, __mmask32 lanes) {
  if constexpr (B == Block::half) sum_half_32(d, s, lanes);
  else if constexpr (B == Block::bfloat16) sum_bfloat16_32(d, s, lanes);
  else sum_bfloat16_32_bf16(d, s, lanes);
}

// Only called where the CPU has what sum_32<B> uses (AVX512_BF16 for bfloat16_instruction alone).
template <Block B>
ROCEBENCH_AVX512_BF16 std::size_t sum_16bit_avx512(std::uint16_t* d, const std::uint16_t* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) sum_32<B>(d + i, s + i, ~__mmask32{0});
  if (i < n) sum_32<B>(d + i, s + i, first_lanes(n - i));
  return n;
}
#undef ROCEBENCH_AVX512
#undef ROCEBENCH_AVX512_BF16
#pragma GCC diagnostic pop

// float32 in 256-bit vectors (the portable build is limited to SSE2's 128).
__attribute__((target("avx2"))) void sum_float_avx2(float* __restrict d, const float* __restrict s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] += s[i];
}

// F16C and AVX512-BF16 by cpuid (clang 14, which builds the sanitized tests, cannot ask
// __builtin_cpu_supports for them): bit `bit` of register `reg` (0 EAX .. 3 EDX); false where the leaf
// is absent, and an absent subleaf of leaf 7 reads as zeros.
bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, int bit) {
  unsigned r[4] = {};
  return __get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3]) && (r[reg] >> bit & 1u);
}
bool has_f16c() { return cpuid_bit(1, 0, 2, 29); }
bool has_avx512bf16_bit() { return cpuid_bit(7, 1, 0, 5); }

bool has_avx2_f16c() {
  static const bool yes = __builtin_cpu_supports("avx2") && has_f16c();
  return yes;
}
bool has_avx512() {
  static const bool yes = has_avx2_f16c() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return yes;
}
bool has_avx512_bf16() {
  static const bool yes = has_avx512() && __builtin_cpu_supports("avx512dq") && has_avx512bf16_bit();
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

// avx512bf16 differs from avx512 in bfloat16 only (float16 runs the same F16C loop).
enum class Kernel { avx512bf16, avx512, avx2, portable };
constexpr const char* kKernelNames[] = {"avx512bf16", "avx512", "avx2", "portable"};

std::vector<Kernel> kernels_here() {
  std::vector<Kernel> out;
#if defined(__x86_64__)
  if (has_avx512_bf16()) out.push_back(Kernel::avx512bf16);
  if (has_avx512()) out.push_back(Kernel::avx512);
  if (has_avx2_f16c()) out.push_back(Kernel::avx2);
#endif
  out.push_back(Kernel::portable);
  return out;
}

void sum_16bit(Kernel kernel, bool half, void* dst, const void* src, std::size_t count) {
  std::size_t done = 0;
#if defined(__x86_64__)
  auto* d = static_cast<std::uint16_t*>(dst);
  const auto* s = static_cast<const std::uint16_t*>(src);
  if (kernel == Kernel::avx512bf16 || kernel == Kernel::avx512) {
    done = half                           ? sum_16bit_avx512<Block::half>(d, s, count)
           : kernel == Kernel::avx512bf16 ? sum_16bit_avx512<Block::bfloat16_instruction>(d, s, count)
                                          : sum_16bit_avx512<Block::bfloat16>(d, s, count);
  }
  if (kernel == Kernel::avx2) done = half ? sum_half_avx2(d, s, count) : sum_bfloat16_avx2(d, s, count);
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
    static const Kernel best = kernels_here().front();
    sum_16bit(best, t == DataType::float16, dst, src, count);
  } else if (op == ReduceOp::max) {
    combine_any(t, dst, src, count, [](auto a, auto b) { return a > b ? a : b; });
  } else {
    combine_any(t, dst, src, count, [](auto a, auto b) { return a + b; });
  }
}

std::vector<std::string> sum_kernels() {
  std::vector<std::string> out;
  for (const Kernel k : kernels_here()) out.emplace_back(kKernelNames[static_cast<int>(k)]);
  return out;
}

void sum_16bit_with(const std::string& kernel, DataType t, void* dst, const void* src, std::size_t count) {
  if (t != DataType::float16 && t != DataType::bfloat16) throw InputError("sum_16bit_with takes float16 or bfloat16");
  for (const Kernel k : kernels_here()) {
    if (kernel == kKernelNames[static_cast<int>(k)]) return sum_16bit(k, t == DataType::float16, dst, src, count);
  }
  throw InputError("sum kernel '" + kernel + "' does not run on this CPU");
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
