// A persistent pool of worker threads that sleep on a condition variable when idle.
#pragma once
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
    int pending;
  };
  struct Item {
    Job* job;
    int index;
  };

  void grow(int workers);  // requires mutex_ held
  void work();
  bool take_own(Job* job, Item& item);  // requires mutex_ held

  std::mutex mutex_;
  std::condition_variable wake_;  // workers: the queue got items
  std::condition_variable done_;  // callers: some job finished
  std::deque<Item> queue_;
  std::vector<std::thread> workers_;
};

// Logical CPUs this process may run on (at least 1).
int available_cpus();

}  // namespace avatar
