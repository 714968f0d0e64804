// One background thread working through a queue of jobs, each job at most
// once (by key): the shape shared by the background compile queue
// (compile_queue.cc) and the background tuner (tuning.cc).
//
// Contract: enqueue() starts the thread on first use and ignores a key it
// has seen (until reset_in_child or forget_finished) or anything after shutdown(). run(item,
// abort) does the work; it should return early once `abort` is set (by
// pause() or shutdown()); an exception it throws is dropped (a job is an
// optimization: a kernel that does not compile stays on tier 0, a kernel
// that cannot be tuned keeps its default schedule). pause()/resume() bracket
// a fork: no job runs across it; reset_in_child() forgets the thread (which
// does not exist in a forked child) and the queue. pending(key) tells
// whether the job of that key is queued or running. Never destroyed while its
// thread runs: owners call shutdown() at exit.
#pragma once

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>

namespace nf::pipeline::detail {

// The nice value of a worker's thread (0: the program's own).
inline constexpr int kNice = 10;

template <typename Item>
class Worker {
 public:
  using Run = void (*)(Item& item, const std::atomic<bool>& abort);
  explicit Worker(Run run) : run_(run) {}

  void enqueue(std::string key, Item item) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_.load()) return;
    if (!seen_.insert(key).second) return;
    pending_.insert(key);
    q_.push_back({std::move(key), std::move(item)});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    cv_.notify_one();
  }

  // Until the queue is empty and no job runs (or shutdown).
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] { return (q_.empty() && busy_ == 0) || stop_.load(); });
  }

  // The running job is asked to stop (abort); no new job starts until resume().
  void pause() {
    std::unique_lock<std::mutex> lock(mu_);
    paused_ = true;
    abort_.store(true);
    idle_cv_.wait(lock, [&] { return busy_ == 0; });
  }
  void resume() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      paused_ = false;
      abort_.store(stop_.load());
    }
    cv_.notify_all();
  }

  // In a forked child: the thread is overwritten, not joined.
  void reset_in_child() {
    new (&mu_) std::mutex();
    new (&cv_) std::condition_variable();
    new (&idle_cv_) std::condition_variable();
    new (&thread_) std::thread();
    q_.clear();
    seen_.clear();
    pending_.clear();
    busy_ = 0;
    paused_ = false;
    abort_.store(stop_.load());
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
      abort_.store(true);
      q_.clear();
      pending_.clear();
    }
    cv_.notify_all();
    idle_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Forgets the keys of finished jobs: enqueue() takes them again.
  void forget_finished() {
    std::lock_guard<std::mutex> lock(mu_);
    seen_ = pending_;
  }

  // Whether the job of `key` is queued or running (not yet finished).
  bool pending(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.count(key) > 0;
  }

  // Jobs finished (run returned or threw).
  int done() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

 private:
  void loop() {
    // Below the program's own threads: a background job (an LLVM compile of
    // tens of milliseconds) sharing a core with the calls it is compiled for
    // made them up to twice as slow while it ran (Cholesky by rows, 2 cores:
    // 4.8 -> 9 ms a call for the ~100 ms its two kernels took). Measured
    // in the commit that set this. (Linux: the nice value is per thread.)
#ifdef __linux__
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kNice);
#endif
    for (;;) {
      std::pair<std::string, Item> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return (!q_.empty() && !paused_) || stop_.load(); });
        if (stop_.load()) return;
        job = std::move(q_.front());
        q_.pop_front();
        ++busy_;
      }
      try {
        run_(job.second, abort_);
      } catch (const std::exception&) {
        // See the contract above: the job's result is simply not there.
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        --busy_;
        ++done_;
        pending_.erase(job.first);
      }
      idle_cv_.notify_all();
    }
  }

  Run run_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::pair<std::string, Item>> q_;
  std::unordered_set<std::string> seen_, pending_;  // every key enqueued; those not finished
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> abort_{false};
  bool paused_ = false;
  int busy_ = 0, done_ = 0;
};

}  // namespace nf::pipeline::detail
