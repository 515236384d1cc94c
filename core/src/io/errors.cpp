#include "wingspan/errors.hpp"

namespace wingspan {

ProfileError::ProfileError(std::string file, std::string field, std::string expected)
    : InputError(file + ": field '" + field + "': " + expected),
      file_(std::move(file)),
      field_(std::move(field)) {}

}  // namespace wingspan
