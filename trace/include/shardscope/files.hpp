#pragma once
// Opening the files a user names without blocking on, or destroying, what is not a plain file:
// a FIFO or a device given as an input is refused before anything waits on it; listing a
// directory without an exception escaping from the middle of the listing.

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace shardscope {

/// "a FIFO", "a character device", "a block device", "a socket", "a directory", "a regular file" or
/// "a special file" for the st_mode of a stat(2).
std::string FileKindName(unsigned mode);

/// Opens `path` for reading ("rb") only when it is a regular file. The open itself never blocks (it
/// uses O_NONBLOCK, cleared once fstat has shown a regular file), so a FIFO or a device named as a
/// trace, rank file or dump is one clean error. Throws Error(kInvalidInput) "WHAT 'PATH' is a FIFO,
/// not a regular file" or "cannot open WHAT 'PATH': <errno text>". The caller fcloses the result.
std::FILE* OpenRegularFileForReading(const std::filesystem::path& path, const std::string& what);

/// The entries of directory `dir` in the order the file system lists them ("." and ".." left out).
/// Throws Error(kInvalidInput) "WHO: cannot list 'DIR': <reason>" when the directory cannot be
/// opened or an error interrupts the listing. Use it instead of a range-for over
/// directory_iterator(dir, ec): that form checks `ec` only when the iterator is made, and its
/// increment throws std::filesystem::filesystem_error on an error in the middle of the listing.
std::vector<std::filesystem::directory_entry> ListDirectory(const std::filesystem::path& dir,
                                                            const std::string& who);

}  // namespace shardscope
