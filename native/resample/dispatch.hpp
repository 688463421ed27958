// Run-time choice of the pass set: the widest instruction set the CPU (and OS)
// supports, unless the caller forces one.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "resample/passes.hpp"

namespace avatar {

enum class Isa { Scalar, Avx2, Avx512 };
// Every variant this module knows, narrowest first.
inline constexpr Isa kAllIsas[] = {Isa::Scalar, Isa::Avx2, Isa::Avx512};

const char* isa_name(Isa isa);
std::optional<Isa> parse_isa(const std::string& name);
// Variants usable on this CPU, narrowest first ("scalar" always).
std::vector<Isa> available_isas();
bool isa_available(Isa isa);
// The widest available variant.
Isa best_isa();
const PassKernels& passes_for(Isa isa);

}  // namespace avatar
