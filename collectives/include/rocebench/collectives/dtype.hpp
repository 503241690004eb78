#pragma once
// Element types and reductions. float16 and bfloat16 are reduced in float32 and rounded back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rocebench::collectives {

enum class DataType { float32, float16, bfloat16, float64 };
enum class ReduceOp { sum, avg, max };

std::size_t size_of(DataType t);
std::string to_string(DataType t);
std::string to_string(ReduceOp op);
DataType parse_dtype(const std::string& name);  // throws InputError listing the choices
ReduceOp parse_op(const std::string& name);

// dst[i] = dst[i] (op) src[i] for count elements; avg reduces as sum (finish_average divides).
void reduce_into(DataType t, ReduceOp op, void* dst, const void* src, std::size_t count);
// The 16-bit sum kernels this CPU runs, best first ("avx512bf16", "avx512", "avx2", "portable"); reduce_into
// uses the first. sum_16bit_with runs a named one, so tests hold each to the element-wise sum.
std::vector<std::string> sum_kernels();
void sum_16bit_with(const std::string& kernel, DataType t, void* dst, const void* src, std::size_t count);
// Divides every element by `ranks` (the last step of avg).
void finish_average(DataType t, void* data, std::size_t count, int ranks);

// Element i as double, and the reverse (rounded to the type).
double load(DataType t, const void* data, std::size_t i);
void store(DataType t, void* data, std::size_t i, double value);

// The bit patterns of the 16-bit types (IEEE half, bfloat16), round-to-nearest-even.
std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(std::uint16_t b);

}  // namespace rocebench::collectives
