#include "core/files.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <cstring>

namespace nf::files {

namespace {

bool private_file(const struct stat& st, std::string* why) {
  if (!S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    return false;
  }
  if (st.st_uid != geteuid()) {
    *why = "owned by another user";
    return false;
  }
  if ((st.st_mode & 022) != 0) {
    *why = "writable by other users";
    return false;
  }
  return true;
}

}  // namespace

std::string unsafe_directory(const std::string& dir) {
  char resolved[PATH_MAX];
  if (!realpath(dir.c_str(), resolved)) return std::string("cannot resolve: ") + std::strerror(errno);
  struct stat st;
  if (stat(resolved, &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "not a directory";
  if (st.st_uid != geteuid()) return "owned by another user";
  if ((st.st_mode & 022) != 0) return "writable by other users";
  return "";
}

bool read_private(const std::string& path, int64_t max_bytes, std::string* out, std::string* why) {
  // O_NONBLOCK: a FIFO opens at once (and is then refused) instead of
  // waiting for a writer; O_NOFOLLOW: a symlink is refused.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    *why = errno == ENOENT ? "missing" : std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && private_file(st, why);
  if (ok && st.st_size > max_bytes) {
    *why = "too large (" + std::to_string(st.st_size) + " bytes)";
    ok = false;
  }
  if (ok) {
    out->clear();
    out->reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        *why = std::string("read error: ") + std::strerror(errno);
        ok = false;
        break;
      }
      if (n == 0) break;
      out->append(buf, static_cast<size_t>(n));
      if (static_cast<int64_t>(out->size()) > max_bytes) {  // grew while we read
        *why = "too large";
        ok = false;
        break;
      }
    }
  }
  close(fd);
  return ok;
}

bool write_atomic(const std::string& path, const std::string& data, std::string* why, bool durable) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string tmp = dir + "/.tmp-XXXXXX";
  int fd = mkstemp(tmp.data());  // O_EXCL, mode 0600: never someone else's file
  if (fd < 0) {
    *why = std::string("cannot create a file: ") + std::strerror(errno);
    return false;
  }
  const char* p = data.data();
  size_t left = data.size();
  bool ok = true;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      *why = std::string("write failed: ") + std::strerror(errno);
      ok = false;
      break;
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  if (ok && durable && fsync(fd) != 0) {
    *why = std::string("fsync failed: ") + std::strerror(errno);
    ok = false;
  }
  if (close(fd) != 0 && ok) {
    *why = std::string("close failed: ") + std::strerror(errno);
    ok = false;
  }
  if (ok && rename(tmp.c_str(), path.c_str()) != 0) {
    *why = std::string("rename failed: ") + std::strerror(errno);
    ok = false;
  }
  if (!ok) unlink(tmp.c_str());
  return ok;
}

int open_lock(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (fd < 0) return -1;
  struct stat st;
  std::string why;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    close(fd);
    return -1;
  }
  return fd;
}

bool lock_exclusive(int fd, double max_wait_s) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(max_wait_s);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) return false;
    if (clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace nf::files
