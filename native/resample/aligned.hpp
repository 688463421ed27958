// 64-byte-aligned, grow-only scratch storage reused across calls.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>

namespace avatar {

inline constexpr std::size_t kAlign = 64;

template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count) { reserve(count); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  ~AlignedBuffer() { std::free(data_); }

  // Grows (never shrinks) to hold at least `count` elements; old contents are dropped.
  T* reserve(std::size_t count) {
    if (count <= size_) return data_;
    const std::size_t bytes = ((count * sizeof(T) + kAlign - 1) / kAlign) * kAlign;
    void* fresh = std::aligned_alloc(kAlign, bytes);
    if (fresh == nullptr) throw std::bad_alloc();
    std::free(data_);
    data_ = static_cast<T*>(fresh);
    size_ = count;
    return data_;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace avatar
