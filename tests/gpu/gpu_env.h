// Shared set-up of GPU tests: one context for the process, or a one-line skip reason.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/cuda_driver.h"

namespace magicube::testing {

// The process's GPU context, or null with `reason` set when there is no usable GPU.
inline Context *gpu(std::string *reason) {
  static std::string why;
  static std::unique_ptr<Context> ctx = []() -> std::unique_ptr<Context> {
    why = no_gpu_reason();
    if (!why.empty()) return nullptr;
    auto c = Context::create(0);
    if (!c) {
      why = llvm::toString(c.takeError());
      return nullptr;
    }
    return std::make_unique<Context>(std::move(*c));
  }();
  if (reason) *reason = why;
  return ctx.get();
}

}  // namespace magicube::testing

// Skips the test, with one line saying why, when no GPU is usable.
#define MAGICUBE_REQUIRE_GPU(ctx_var)                                       \
  std::string magicube_no_gpu_reason_;                                      \
  ::magicube::Context *ctx_var = ::magicube::testing::gpu(&magicube_no_gpu_reason_); \
  if (!ctx_var) GTEST_SKIP() << "no GPU: " << magicube_no_gpu_reason_
