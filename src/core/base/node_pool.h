// node_pool.h — a free list of equal-sized nodes for a node-based container (std::set) that
// inserts and erases millions of times per estimate (the allocator replay's free sets).
//
// Purpose: the general-purpose heap costs more per set insert than the tree walk does (about a
// fifth of the replay's time natively, more under WebAssembly's malloc). Freed nodes go on a
// list and are handed out again; memory is returned when the pool is destroyed.
// Limitations: single-threaded; one node size per pool (the container's node type); requests of
// more than one object go to the ordinary heap. The pool must outlive every container using it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace stagemem {

class NodePool {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  void* take(std::size_t bytes) {
    if (free_ != nullptr && bytes <= node_bytes_) {
      FreeNode* node = free_;
      free_ = node->next;
      return node;
    }
    if (node_bytes_ == 0) node_bytes_ = std::max(bytes, sizeof(FreeNode));
    if (bytes > node_bytes_) return ::operator new(bytes);
    if (used_in_chunk_ == kNodesPerChunk || chunks_.empty()) {
      chunks_.push_back(std::make_unique<std::byte[]>(node_bytes_ * kNodesPerChunk));
      used_in_chunk_ = 0;
    }
    return chunks_.back().get() + node_bytes_ * used_in_chunk_++;
  }
  void give_back(void* p, std::size_t bytes) {
    if (bytes > node_bytes_) {
      ::operator delete(p);
      return;
    }
    free_ = new (p) FreeNode{free_};
  }

 private:
  struct FreeNode {
    FreeNode* next;
  };
  static constexpr std::size_t kNodesPerChunk = 256;
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::size_t node_bytes_ = 0;
  std::size_t used_in_chunk_ = 0;
  FreeNode* free_ = nullptr;
};

// The standard allocator interface over a NodePool (rebinds share the pool).
template <class T>
struct NodePoolAllocator {
  using value_type = T;
  NodePool* pool;
  explicit NodePoolAllocator(NodePool* p) noexcept : pool(p) {}
  template <class U>
  NodePoolAllocator(const NodePoolAllocator<U>& other) noexcept : pool(other.pool) {}
  T* allocate(std::size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(pool->take(sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n != 1) {
      ::operator delete(p);
      return;
    }
    pool->give_back(p, sizeof(T));
  }
  template <class U>
  bool operator==(const NodePoolAllocator<U>& other) const noexcept {
    return pool == other.pool;
  }
};

}  // namespace stagemem
