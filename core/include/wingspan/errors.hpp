#pragma once
#include <stdexcept>
#include <string>

namespace wingspan {

// A user-facing input problem: the CLI prints the message and exits with code 2.
class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Writing failed (disk full, read-only folder, permissions): a failure of the environment,
// not of the input. The message names the file and the system's reason.
class IoError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A plan whose sizes no machine could ever hold (more than kMaxPlanBytes): the memory model
// refuses it rather than compute with numbers that would overflow. Solvers read it as "no".
class PlanTooLargeError : public InputError {
public:
    using InputError::InputError;
};

// A profile file that cannot be used, naming the file, the field and what was expected.
class ProfileError : public InputError {
public:
    ProfileError(std::string file, std::string field, std::string expected);
    const std::string& file() const { return file_; }
    const std::string& field() const { return field_; }

private:
    std::string file_, field_;
};

}  // namespace wingspan
