#include "wingspan/plan_lookup.hpp"

namespace wingspan {

std::optional<ResolvedModel> try_resolve_model(const ProfileLibrary& lib, const ModelChoice& choice) {
    try {
        return resolve_model(lib, choice);
    } catch (const std::exception&) {   // InputError, and whatever a config's parser throws
        return std::nullopt;
    }
}

}  // namespace wingspan
