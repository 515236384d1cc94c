#pragma once
// resolve_model (plan.hpp) without exceptions, for the window's places that show what they can
// without the model (the size slider's range, the run form's choices, the plan-versus-run
// comparison): nullopt where resolve_model would throw (an unknown id, an unreadable config).
#include <optional>

#include "wingspan/plan.hpp"

namespace wingspan {

std::optional<ResolvedModel> try_resolve_model(const ProfileLibrary& lib, const ModelChoice& choice);

}  // namespace wingspan
