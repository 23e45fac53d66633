// CHECK(cond) << "why": programmer invariants; a failure prints the condition and aborts.
// DCHECK is compiled only in debug builds (NDEBUG unset). Input errors use Status instead.
#pragma once

#include "base/logging.h"

#define CHECK(cond)                                                                 \
  (cond) ? (void)0                                                                  \
         : ::forge::internal::LogVoidify() &                                        \
               ::forge::internal::LogMessage(::forge::LogLevel::kFatal, __FILE__, __LINE__) \
                       .stream()                                                    \
                   << "CHECK failed: " #cond " "

#define FORGE_CHECK_OP(a, b, op) CHECK((a)op(b)) << "(" << (a) << " vs " << (b) << ") "
#define CHECK_EQ(a, b) FORGE_CHECK_OP(a, b, ==)
#define CHECK_NE(a, b) FORGE_CHECK_OP(a, b, !=)
#define CHECK_LT(a, b) FORGE_CHECK_OP(a, b, <)
#define CHECK_LE(a, b) FORGE_CHECK_OP(a, b, <=)
#define CHECK_GT(a, b) FORGE_CHECK_OP(a, b, >)
#define CHECK_GE(a, b) FORGE_CHECK_OP(a, b, >=)

#ifdef NDEBUG
#define DCHECK(cond) \
  while (false) CHECK(cond)
#define DCHECK_EQ(a, b) \
  while (false) CHECK_EQ(a, b)
#define DCHECK_LT(a, b) \
  while (false) CHECK_LT(a, b)
#define DCHECK_LE(a, b) \
  while (false) CHECK_LE(a, b)
#else
#define DCHECK(cond) CHECK(cond)
#define DCHECK_EQ(a, b) CHECK_EQ(a, b)
#define DCHECK_LT(a, b) CHECK_LT(a, b)
#define DCHECK_LE(a, b) CHECK_LE(a, b)
#endif
