#pragma once
// Writing files so that nothing is lost or redirected: every writer goes through here.
// A file is written to a temporary created exclusively in the target's folder (mkstemp:
// an unpredictable name, O_EXCL, so a planted symlink is never followed), every write is
// checked (a full disk is an IoError, never a silent empty file), the data is fsynced, and
// the temporary is renamed over the target, so readers see the old file or the new one.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace wingspan {

class ConfinedDir;

class AtomicFile {
public:
    // Creates ".<name>.tmp-XXXXXX" beside `target`. Throws IoError.
    explicit AtomicFile(std::filesystem::path target);
    // The same in a folder opened without following links (confined_dir.hpp): the temporary,
    // the rename and the fsync all go through its descriptor, so no link redirects them.
    AtomicFile(const ConfinedDir& dir, const std::string& name);
    ~AtomicFile();   // removes the temporary unless commit() succeeded
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const void* data, size_t bytes);   // throws IoError (ENOSPC, EIO, ...)
    void write(std::string_view text) { write(text.data(), text.size()); }
    // fsync, close, rename over the target, fsync the folder. Throws IoError.
    void commit();

    const std::filesystem::path& target() const { return target_; }
    std::uint64_t bytes_written() const { return bytes_; }
    // FNV-1a 64 of everything written, for manifests that a later reader verifies.
    std::uint64_t checksum() const { return hash_; }

private:
    void create_temporary();
    std::filesystem::path target_;   // for messages
    std::string name_, temp_;        // in the folder dir_fd_ holds open
    int dir_fd_ = -1;
    int fd_ = -1;
    std::uint64_t bytes_ = 0;
    std::uint64_t hash_;
};

// The whole text, atomically (AtomicFile). Throws IoError.
void write_file_atomically(const std::filesystem::path& file, std::string_view text);

// Appends one line (a newline is added) with a single write() on an O_APPEND descriptor, so
// lines from several processes never interleave; refuses to follow a symlink. Throws IoError.
void append_line(const std::filesystem::path& file, std::string_view line);

// mkdir that fails when the folder exists: false if it existed, true if we made it. Throws
// IoError for any other failure. Two processes never both get true for one path.
bool create_directory_exclusively(const std::filesystem::path& dir);

// Creates `dir` (and parents) and proves it writable by creating and removing a temporary
// file in it. Throws IoError naming the folder and the reason (read-only, permissions, full).
void require_writable_directory(const std::filesystem::path& dir);

// Removes the temporaries AtomicFile leaves behind when a process is killed mid-write
// (".<name>.tmp-XXXXXX" files directly in `dir`). Returns how many were removed.
int remove_stale_temporaries(const std::filesystem::path& dir);

// FNV-1a 64 of a file's bytes (the checksum AtomicFile reports). Throws IoError.
std::uint64_t file_checksum(const std::filesystem::path& file);

}  // namespace wingspan
