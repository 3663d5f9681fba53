// RegistrationCache: memory registered with ucp_mem_map, kept between calls.
//
// Registering memory (pinning it and creating keys for the NIC) costs far more than a small
// message, so the RDMA path registers each receive buffer once and looks it up afterwards:
// a lookup hits when a live registration covers [address, address + length). A freed buffer
// whose address is reused would then hit a registration of pages that are gone, so the cache
// listens to UCX's memory events (libucm hooks munmap, mremap, madvise and brk): every
// registration that overlaps unmapped memory is dropped at the next lookup. Heap memory that
// is freed but never returned to the kernel keeps its pages, and its registration stays good.
//
// Each registration has an id, unique for the cache's life; the remote side caches unpacked
// keys by that id, so a new registration at an old address can never be confused with the
// old one.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <vector>

namespace arlab::detail {

struct Registration {
  std::uint64_t id = 0;
  std::uintptr_t base = 0;
  std::size_t length = 0;
  ucp_mem_h memh = nullptr;
  std::vector<std::byte> packed_rkey;
  std::vector<bool> rkey_sent_to;  // per peer: has this peer been sent the key?
  std::uint64_t last_use = 0;
};

struct RegistrationStats {
  std::uint64_t registrations = 0;  // ucp_mem_map calls
  std::uint64_t hits = 0;
  std::uint64_t invalidations = 0;  // dropped because their memory was unmapped
  std::uint64_t evictions = 0;      // dropped to stay within the entry limit
  std::size_t live = 0;
};

class RegistrationCache {
 public:
  // `on_drop` is told each registration before it is unmapped (to retire remote keys).
  RegistrationCache(ucp_context_h context, std::size_t max_entries,
                    std::function<void(const Registration&)> on_drop = {});
  ~RegistrationCache();
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // Drops the registrations whose memory was unmapped since the last refresh. Called before
  // each run, never in the middle of one.
  void refresh();
  // A registration covering [address, address + length), made if none is live. The reference
  // stays valid until the next `refresh` or `clear`, and `max_entries` (at least 2) later gets.
  Registration& get(const void* address, std::size_t length);
  // The live registration containing [address, address + length), or nullptr.
  Registration* find(const void* address, std::size_t length);
  void clear();

  RegistrationStats stats() const;
  // False when UCX's memory events could not be installed: every refresh then drops all
  // registrations, and each run registers afresh (safe, slower).
  bool watches_memory() const { return watching_; }

  // Called by the memory hook, from any thread, possibly inside free(): records the range
  // without allocating.
  void note_unmapped(std::uintptr_t begin, std::uintptr_t end);

 private:
  void drop(std::list<Registration>::iterator it);

  ucp_context_h context_;
  std::size_t max_entries_;
  std::function<void(const Registration&)> on_drop_;
  std::list<Registration> entries_;
  std::uint64_t next_id_ = 1, clock_ = 0;
  RegistrationStats stats_;
  bool watching_ = false;
  // Unmapped ranges, written by the memory hook (which may run inside free(), so it must not
  // allocate) and read at the next lookup. On overflow everything is dropped.
  static constexpr std::size_t kRanges = 256;
  struct Range {
    std::uintptr_t begin, end;
  };
  std::atomic_flag ranges_lock_ = ATOMIC_FLAG_INIT;
  Range ranges_[kRanges];
  std::size_t range_count_ = 0;
  bool overflow_ = false;
};

}  // namespace arlab::detail
