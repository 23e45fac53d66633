// Included first by the files whose float arithmetic defines a result bit for bit (the integer dot
// products' per-block float steps, the activation quantizer): every float operation is rounded on
// its own, never fused into a multiply-add by the compiler, so the reference, the scalar path and
// the vector paths agree.
#pragma once

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
