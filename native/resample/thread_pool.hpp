// A persistent pool of worker threads. An idle worker polls for new work for 100 us,
// then sleeps on a condition variable.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace avatar {

class ThreadPool {
 public:
  // The process-wide pool. A child process after fork() gets a fresh pool, since
  // the parent's workers do not exist there.
  static ThreadPool& instance();

  // Runs task(0) .. task(count - 1) on the caller and up to threads - 1 workers, and
  // returns when all have finished. The caller runs task 0, then takes back its own
  // queued tasks, so neither a busy worker (another caller's job) nor a descheduled
  // one holds it up for longer than one task. Tasks must not throw.
  void run(int count, int threads, const std::function<void(int)>& task);

  ThreadPool() = default;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

 private:
  struct Job {
    const std::function<void(int)>* task;
    std::atomic<int> pending;
  };
  struct Item {
    Job* job;
    int index;
  };

  void grow(int workers);  // requires mutex_ held
  void work();
  bool take_own(Job* job, Item& item);  // requires mutex_ held
  void publish_queued();                // requires mutex_ held; after queue_ changes

  std::mutex mutex_;
  std::condition_variable wake_;  // workers: the queue got items
  std::condition_variable done_;  // callers: some job finished
  std::deque<Item> queue_;
  std::atomic<int> queued_{0};  // queue_.size(), for polling without the mutex
  std::vector<std::thread> workers_;
};

// Logical CPUs this process may run on (at least 1).
int available_cpus();

}  // namespace avatar
