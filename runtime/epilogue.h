// The float epilogue on the CPU: the same double arithmetic and rounding as the generated
// kernels (templates/epilogue_math.cuh), for references and tests.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir.h"

namespace magicube {

// Scales and bias of a float output. Pointers may be empty where the spec does not use them.
struct EpilogueArgs {
  float alpha = 1.0f;
  std::vector<float> row_scale, col_scale, bias;
};

// x = acc (* alpha | * row_scale[row] * col_scale[col]) (+ bias[row] | + bias[col]), in double.
double dequantize(const OpSpec &spec, int64_t acc, const EpilogueArgs &args, int64_t row, int64_t col);

// The output element as stored: f32 bits, or f16/bf16 bits (round to nearest even).
uint32_t f32_bits(double x);
uint16_t f16_bits(double x);
uint16_t bf16_bits(double x);
// The same as the kernels compute them (round to odd into a float, then to nearest even):
// equal to f16_bits and bf16_bits for every double (tests/test_epilogue.cpp).
uint16_t kernel_f16_bits(double x);
uint16_t kernel_bf16_bits(double x);
double f16_value(uint16_t bits);
double bf16_value(uint16_t bits);

// The value of one stored output element: an integer output's value, or the float (f32,
// f16, bf16) whose bit pattern `element` holds (zero-extended into int64).
double stored_value(OutType out, int64_t element);

}  // namespace magicube
