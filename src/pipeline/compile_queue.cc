// Compiling kernels in the background: a group that tier 0 interprets while
// its fused kernel is not worth compiling at once (cost model, flush.cc) is
// compiled here once its window recurs; later flushes pick the kernel up
// from the kernel cache.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "pipeline/tiers.h"
#include "pipeline/tuning.h"

namespace nf::pipeline::detail {

namespace {

class CompileQueue {
 public:
  static CompileQueue& instance() {
    static CompileQueue* q = new CompileQueue();  // never destroyed: stopped at exit
    return *q;
  }

  void enqueue(std::shared_ptr<const mdh::MdHom> hom, const tune::Schedule& s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    std::string key = kernel_key(*hom, s);
    if (!seen_.insert(key).second) return;
    q_.push_back({std::move(hom), s});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    cv_.notify_one();
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] { return (q_.empty() && busy_ == 0) || stop_; });
  }

  // Around a fork: no compile runs across it (the compiler's locks would
  // be held in the child by a thread that does not exist there).
  void pause() {
    std::unique_lock<std::mutex> lock(mu_);
    paused_ = true;
    idle_cv_.wait(lock, [&] { return busy_ == 0; });
  }
  void resume() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      paused_ = false;
    }
    cv_.notify_all();
  }
  void reset_in_child() {
    new (&mu_) std::mutex();
    new (&cv_) std::condition_variable();
    new (&idle_cv_) std::condition_variable();
    new (&thread_) std::thread();
    q_.clear();
    seen_.clear();
    busy_ = 0;
    paused_ = false;
  }
  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      q_.clear();
    }
    cv_.notify_all();
    idle_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  int done() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

 private:
  struct Item {
    std::shared_ptr<const mdh::MdHom> hom;
    tune::Schedule schedule;
  };

  void loop() {
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return (!q_.empty() && !paused_) || stop_; });
        if (stop_) return;
        item = std::move(q_.front());
        q_.pop_front();
        ++busy_;
      }
      try {
        compile_kernel(*item.hom, item.schedule);
      } catch (const std::exception&) {
        // The group keeps running on tier 0; a flush that compiles it at
        // once reports the error.
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        --busy_;
        ++done_;
      }
      idle_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Item> q_;
  std::unordered_set<std::string> seen_;
  std::thread thread_;
  bool stop_ = false, paused_ = false;
  int busy_ = 0, done_ = 0;
};

}  // namespace

void compile_in_background(std::shared_ptr<const mdh::MdHom> hom, const tune::Schedule& s) {
  CompileQueue::instance().enqueue(std::move(hom), s);
}
void compile_queue_wait() { CompileQueue::instance().wait(); }
void compile_queue_pause() { CompileQueue::instance().pause(); }
void compile_queue_resume() { CompileQueue::instance().resume(); }
void compile_queue_reset_in_child() { CompileQueue::instance().reset_in_child(); }
void compile_queue_stop() { CompileQueue::instance().shutdown(); }
int compile_queue_done() { return CompileQueue::instance().done(); }

}  // namespace nf::pipeline::detail
