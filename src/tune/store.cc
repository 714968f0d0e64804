// The schedule store (see tune.h).
//
// File format, one entry per line, tab-separated:
//   device  fnv64(MdHom key)  size class  schedule (Schedule::key)  best ms  default ms  evaluations
// and for a multi-stage kernel's launch choice:
//   device  fnv64("launch\n" + chain key)  size class  launch=<candidate>  best ms  default ms  evaluations
#include <chrono>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/files.h"
#include "tune/tune.h"

namespace nf::tune {

namespace {

uint64_t fnv64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string entry_key(const std::string& device, const mdh::MdHom& h, const std::string& cls) {
  return device + "\t" + hex(fnv64(h.key())) + "\t" + cls;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, '\t')) out.push_back(f);
  return out;
}

// Parses a file's lines into `out` (malformed lines are skipped).
void parse_file(const std::string& text, std::unordered_map<std::string, std::string>& out) {
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    std::vector<std::string> f = fields(line);
    if (f.size() != 7) continue;
    out[f[0] + "\t" + f[1] + "\t" + f[2]] = f[3] + "\t" + f[4] + "\t" + f[5] + "\t" + f[6];
  }
}

// The store is a hint; a bigger file is not one numfuse wrote.
constexpr int64_t kMaxStoreBytes = int64_t(16) << 20;

bool read_file(const std::string& path, std::string* text) {
  std::string why;
  return files::read_private(path, kMaxStoreBytes, text, &why);
}

std::string serialize(const std::unordered_map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += k + "\t" + v + "\n";
  return s;
}

}  // namespace

std::string size_class(const mdh::MdHom& h, const mdh::Bindings& b) {
  std::string s;
  for (int d = 0; d < h.ndim; ++d) {
    const int64_t n = b.extent(h, d);
    int lg = 0;
    while ((int64_t(1) << lg) < n) ++lg;
    s += (d ? "x" : "") + std::to_string(int64_t(1) << lg);
  }
  return s.empty() ? "scalar" : s;
}

namespace {

// The CPU's model name (read once: every analysis of an unseen group asks).
const std::string& cpu_model() {
  static const std::string model = [] {
    std::string m = "cpu";
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("model name", 0) == 0) {
        m = line.substr(line.find(':') + 1);
        while (!m.empty() && m.front() == ' ') m.erase(m.begin());
        break;
      }
    for (char& c : m)
      if (c == '\t') c = ' ';
    return m;
  }();
  return model;
}

}  // namespace

std::string device_id(const Asm& target) {
  if (target.gpu()) return "gpu " + target.gpu_name + " x" + std::to_string(target.sms);
  return cpu_model() + " x" + std::to_string(target.cores);
}

ScheduleStore& ScheduleStore::instance() {
  static ScheduleStore* s = new ScheduleStore();
  return *s;
}

void ScheduleStore::configure(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  path_ = path;
  entries_.clear();
  own_launches_.clear();
  mtime_ns_ = file_size_ = -1;
  checked_ = false;
  generation_.fetch_add(1);
  resets_.fetch_add(1);
}

std::string ScheduleStore::path() const {
  std::lock_guard<std::mutex> lock(mu_);
  return path_;
}

void ScheduleStore::reload_if_changed() {
  if (path_.empty()) return;
  // Every analysis of an unseen group asks: the file is looked at no more
  // than every 50 ms (a system call per group was a tenth of analysing a
  // window of small groups); other processes' tunings arrive as soon.
  const auto now = std::chrono::steady_clock::now();
  if (checked_ && now - last_check_ < std::chrono::milliseconds(50)) return;
  checked_ = true;
  last_check_ = now;
  struct stat st;
  if (lstat(path_.c_str(), &st) != 0) {
    if (mtime_ns_ != -1 || file_size_ != -1) {  // the file went away
      mtime_ns_ = file_size_ = -1;
    }
    return;
  }
  const int64_t mt = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (mt == mtime_ns_ && st.st_size == file_size_) return;
  std::string text;
  if (!read_file(path_, &text)) return;
  std::unordered_map<std::string, std::string> fresh;
  parse_file(text, fresh);
  // Entries written by this process but not (yet) on disk stay.
  for (auto& [k, v] : entries_) fresh.emplace(k, v);
  if (fresh != entries_) generation_.fetch_add(1);
  entries_ = std::move(fresh);
  mtime_ns_ = mt;
  file_size_ = st.st_size;
}

bool ScheduleStore::find(const std::string& device, const mdh::MdHom& h, const mdh::Bindings& b,
                         const std::string& cls, StoreEntry* out, const Asm& target) {
  std::lock_guard<std::mutex> lock(mu_);
  reload_if_changed();
  if (entries_.empty()) return false;  // (nothing tuned: no key to make, for every group analysed)
  const std::string key = entry_key(device, h, cls);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  std::vector<std::string> f = fields(it->second);
  std::string why;
  if (f.size() != 4) {
    why = "malformed";
  } else {
    try {
      out->schedule = Schedule::parse(f[0]);
      out->best_s = std::stod(f[1]) / 1e3;
      out->default_s = std::stod(f[2]) / 1e3;
      out->evals = std::stoi(f[3]);
      why = out->schedule.why_illegal(h);
      if (why.empty()) why = out->schedule.why_unsafe(h, b, target);
    } catch (const std::exception& e) {
      why = std::string("malformed (") + e.what() + ")";
    }
  }
  if (why.empty()) return true;
  // Anything read from the cache directory is input: a doubtful entry is
  // ignored (the default schedule runs), once with a warning.
  if (rejected_.insert(key).second) {
    warnings_.push_back("numfuse: ignoring a tuned schedule in " + path_ + ": " + why);
    has_warnings_.store(true, std::memory_order_release);
  }
  return false;
}

std::vector<std::string> ScheduleStore::take_warnings() {
  if (!has_warnings_.load(std::memory_order_acquire)) return {};  // (every flush asks: no lock)
  std::lock_guard<std::mutex> lock(mu_);
  has_warnings_.store(false, std::memory_order_relaxed);
  std::vector<std::string> w;
  w.swap(warnings_);
  return w;
}

bool ScheduleStore::put(const std::string& device, const mdh::MdHom& h, const std::string& cls, const StoreEntry& e) {
  std::lock_guard<std::mutex> lock(mu_);
  char times[96];
  std::snprintf(times, sizeof times, "%.6g\t%.6g\t%d", e.best_s * 1e3, e.default_s * 1e3, e.evals);
  generation_.fetch_add(1);
  return put_line(entry_key(device, h, cls), e.schedule.key() + "\t" + times);
}

namespace {
std::string launch_key(const std::string& device, const std::string& chain_key, const std::string& cls) {
  return device + "\t" + hex(fnv64("launch\n" + chain_key)) + "\t" + cls;
}
}  // namespace

bool ScheduleStore::find_launch(const std::string& device, const std::string& chain_key, const std::string& cls,
                                int* choice, bool* ours) {
  std::lock_guard<std::mutex> lock(mu_);
  reload_if_changed();
  const std::string key = launch_key(device, chain_key, cls);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  const std::vector<std::string> f = fields(it->second);
  if (f.size() == 4 && f[0].rfind("launch=", 0) == 0 && f[0].size() > 7 && f[0].size() < 10 &&
      f[0].find_first_not_of("0123456789", 7) == std::string::npos) {
    *choice = std::stoi(f[0].substr(7));
    if (ours) *ours = own_launches_.count(key) > 0;
    return true;
  }
  if (rejected_.insert(key).second) {
    warnings_.push_back("numfuse: ignoring a tuned launch in " + path_ + ": malformed");
    has_warnings_.store(true, std::memory_order_release);
  }
  return false;
}

bool ScheduleStore::put_launch(const std::string& device, const std::string& chain_key, const std::string& cls,
                               int choice, double best_s, double default_s, int evals) {
  std::lock_guard<std::mutex> lock(mu_);
  char line[128];
  std::snprintf(line, sizeof line, "launch=%d\t%.6g\t%.6g\t%d", choice, best_s * 1e3, default_s * 1e3, evals);
  const std::string key = launch_key(device, chain_key, cls);
  own_launches_.insert(key);
  return put_line(key, line);
}

bool ScheduleStore::put_line(const std::string& key, const std::string& value) {
  entries_[key] = value;
  if (path_.empty()) return false;
  // Merge with what other processes wrote, under an exclusive lock.
  int lfd = files::open_lock(path_ + ".lock");
  if (lfd < 0) {
    warnings_.push_back("numfuse: " + path_ + ".lock is not a private regular file; the tuned schedule is kept "
                        "for this process only");
    has_warnings_.store(true, std::memory_order_release);
    return false;
  }
  bool ok = false;
  if (!files::lock_exclusive(lfd, 10.0)) {
    warnings_.push_back("numfuse: " + path_ + ".lock has been held by another process for 10 s; the tuned "
                        "schedule is kept for this process only");
    has_warnings_.store(true, std::memory_order_release);
  } else {
    std::string text, why;
    std::unordered_map<std::string, std::string> merged;
    if (read_file(path_, &text)) parse_file(text, merged);
    merged[key] = entries_[key];
    for (auto& [k, v] : merged) entries_.emplace(k, v);
    ok = files::write_atomic(path_, serialize(merged), &why);
    struct stat st;
    if (ok && lstat(path_.c_str(), &st) == 0) {
      mtime_ns_ = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      file_size_ = st.st_size;
    }
    flock(lfd, LOCK_UN);
  }
  close(lfd);
  return ok;
}

size_t ScheduleStore::size() {
  std::lock_guard<std::mutex> lock(mu_);
  reload_if_changed();
  return entries_.size();
}

void ScheduleStore::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  own_launches_.clear();
  if (!path_.empty()) unlink(path_.c_str());
  mtime_ns_ = file_size_ = -1;
  checked_ = false;
  generation_.fetch_add(1);
  resets_.fetch_add(1);
}

}  // namespace nf::tune
