#pragma once
#include <stdexcept>
#include <string>

namespace wingspan {

// A user-facing input problem: the CLI prints the message and exits with code 2.
class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
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
