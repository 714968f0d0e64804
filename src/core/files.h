// Files of numfuse's cache directory (kernel objects, tuned schedules).
//
// Whatever is in that directory is input: another process, another user, a
// broken disk or a hostile program may have put anything there -- a FIFO
// named like an entry, a symlink, a file of another owner, a truncated or
// enormous file. These helpers never block, never follow a symlink at the
// last component, accept only regular files owned by this user that nobody
// else can write, bound what they read, and write atomically (a temporary
// file renamed into place, nothing left behind when the disk is full).
#pragma once

#include <cstdint>
#include <string>

namespace nf::files {

// Why `dir` cannot hold numfuse's caches ("" when it can): it must be a
// directory (a symlink to one is resolved), owned by this user, and not
// writable by group or others.
std::string unsafe_directory(const std::string& dir);

// Reads all of `path` into *out if it is a regular file owned by this user,
// not group- or world-writable, and at most `max_bytes` long. Returns false
// with *why set otherwise ("missing" when it does not exist).
bool read_private(const std::string& path, int64_t max_bytes, std::string* out, std::string* why);

// Replaces `path` with `data` atomically (mode 0600). Returns false with
// *why set, leaving no temporary file behind, when it cannot (full disk,
// read-only directory, a non-file in the way). `durable`: the data reach the
// disk (fsync) before the rename, so a crash leaves the old file or the new
// one; without it a crash may leave a torn file, for contents that carry
// their own length and checksum (the kernel cache's entries).
bool write_atomic(const std::string& path, const std::string& data, std::string* why, bool durable = true);

// Opens (creating, mode 0600) a lock file without following symlinks or
// blocking on a FIFO; -1 if it is not a regular file of this user.
int open_lock(const std::string& path);

// Takes an exclusive flock on `fd`, waiting at most `max_wait_s` seconds
// (another process may hold it forever): false when it could not.
bool lock_exclusive(int fd, double max_wait_s);

}  // namespace nf::files
