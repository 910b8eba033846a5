#pragma once
// Private: PageAllocator<T>, for a reader's temporaries that outlive the file they were made for
// (a rank file's records, copied into the Model once every file is read). Freed between the
// model's own allocations, a heap block stays a hole the heap cannot give back (malloc_trim returns
// only whole free pages, and the heap reuses a hole's edges); mapped pages of their own go back to
// the system when freed. Blocks under half a page come from the heap as usual.

#include <sys/mman.h>

#include <cstddef>
#include <new>

namespace shardscope::trace::detail {

template <typename T>
class PageAllocator {
 public:
  using value_type = T;
  PageAllocator() = default;
  template <typename U>
  PageAllocator(const PageAllocator<U>&) {}  // NOLINT(google-explicit-constructor)

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);  // std::vector checks n against max_size first
    if (bytes < kMinBytes) return static_cast<T*>(::operator new(bytes));
    void* p = mmap(nullptr, Pages(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kMinBytes)
      ::operator delete(p);
    else
      munmap(p, Pages(bytes));
  }
  friend bool operator==(const PageAllocator&, const PageAllocator&) { return true; }

 private:
  static constexpr size_t kPage = 4096;  // a multiple of the page size is all mmap needs
  static constexpr size_t kMinBytes = kPage / 2;
  static size_t Pages(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }
};

}  // namespace shardscope::trace::detail
