#include "resample/dispatch.hpp"

namespace avatar {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "scalar";
}

std::optional<Isa> parse_isa(const std::string& name) {
  for (Isa isa : kAllIsas) {
    if (name == isa_name(isa)) return isa;
  }
  return std::nullopt;
}

bool isa_available(Isa isa) {
#ifdef AVATAR_HAVE_X86
  // libgcc's feature probe also checks that the OS saves the wider registers (XCR0).
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma");
  }
  return false;
#else
  return isa == Isa::Scalar;
#endif
}

std::vector<Isa> available_isas() {
  std::vector<Isa> isas;
  for (Isa isa : kAllIsas) {
    if (isa_available(isa)) isas.push_back(isa);
  }
  return isas;
}

Isa best_isa() {
  static const Isa best = available_isas().back();
  return best;
}

const PassKernels& passes_for(Isa isa) {
#ifdef AVATAR_HAVE_X86
  if (isa == Isa::Avx2) return avx2_passes();
  if (isa == Isa::Avx512) return avx512_passes();
#endif
  return scalar_passes();
}

}  // namespace avatar
