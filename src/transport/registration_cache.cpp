#include "transport/registration_cache.hpp"

#include <ucm/api/ucm.h>

#include <algorithm>

#include "arlab/arlab.hpp"

namespace arlab::detail {

namespace {

void on_memory_event(ucm_event_type_t type, ucm_event_t* event, void* arg) {
  if (type != UCM_EVENT_VM_UNMAPPED) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(event->vm_unmapped.address);
  static_cast<RegistrationCache*>(arg)->note_unmapped(begin, begin + event->vm_unmapped.size);
}

}  // namespace

RegistrationCache::RegistrationCache(ucp_context_h context, std::size_t max_entries,
                                     std::function<void(const Registration&)> on_drop)
    : context_(context), max_entries_(std::max<std::size_t>(max_entries, 2)), on_drop_(std::move(on_drop)) {
  watching_ = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, &on_memory_event, this) == UCS_OK;
}

RegistrationCache::~RegistrationCache() {
  if (watching_) ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, &on_memory_event, this);
  clear();
}

void RegistrationCache::note_unmapped(std::uintptr_t begin, std::uintptr_t end) {
  while (ranges_lock_.test_and_set(std::memory_order_acquire)) {
  }
  if (range_count_ < kRanges) ranges_[range_count_++] = {begin, end};
  else overflow_ = true;
  ranges_lock_.clear(std::memory_order_release);
}

void RegistrationCache::refresh() {
  Range local[kRanges];
  std::size_t n = 0;
  bool all = false;
  while (ranges_lock_.test_and_set(std::memory_order_acquire)) {
  }
  n = range_count_;
  std::copy(ranges_, ranges_ + n, local);
  all = overflow_;
  range_count_ = 0;
  overflow_ = false;
  ranges_lock_.clear(std::memory_order_release);
  // Unmapping a registration may itself unmap memory and re-enter note_unmapped: the lock is
  // not held here.
  if (!watching_) all = true;
  for (auto it = entries_.begin(); it != entries_.end();) {
    bool stale = all;
    for (std::size_t k = 0; k < n && !stale; ++k)
      stale = local[k].begin < it->base + it->length && it->base < local[k].end;
    if (stale) {
      if (watching_) ++stats_.invalidations;
      auto next = std::next(it);
      drop(it);
      it = next;
    } else {
      ++it;
    }
  }
}

Registration* RegistrationCache::find(const void* address, std::size_t length) {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  for (auto& r : entries_)
    if (r.base <= a && a + length <= r.base + r.length) return &r;
  return nullptr;
}

Registration& RegistrationCache::get(const void* address, std::size_t length) {
  ++clock_;
  if (Registration* r = find(address, length)) {
    ++stats_.hits;
    r->last_use = clock_;
    return *r;
  }
  while (entries_.size() >= max_entries_) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const auto& x, const auto& y) { return x.last_use < y.last_use; });
    ++stats_.evictions;
    drop(oldest);
  }
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = const_cast<void*>(address);
  p.length = std::max<std::size_t>(length, 1);
  Registration r;
  ucs_status_t st = ucp_mem_map(context_, &p, &r.memh);
  if (st != UCS_OK)
    throw Error(Error::Code::Transport, std::string("arlab: ucp_mem_map of ") + std::to_string(length) +
                                            " bytes failed: " + ucs_status_string(st));
  void* packed = nullptr;
  std::size_t packed_len = 0;
  st = ucp_rkey_pack(context_, r.memh, &packed, &packed_len);
  if (st != UCS_OK) {
    ucp_mem_unmap(context_, r.memh);
    throw Error(Error::Code::Transport, std::string("arlab: ucp_rkey_pack failed: ") + ucs_status_string(st));
  }
  r.packed_rkey.assign(static_cast<std::byte*>(packed), static_cast<std::byte*>(packed) + packed_len);
  ucp_rkey_buffer_release(packed);
  r.id = next_id_++;
  r.base = reinterpret_cast<std::uintptr_t>(address);
  r.length = p.length;
  r.last_use = clock_;
  ++stats_.registrations;
  entries_.push_back(std::move(r));
  return entries_.back();
}

void RegistrationCache::drop(std::list<Registration>::iterator it) {
  if (on_drop_) on_drop_(*it);
  ucp_mem_unmap(context_, it->memh);
  entries_.erase(it);
}

void RegistrationCache::clear() {
  while (!entries_.empty()) drop(entries_.begin());
}

RegistrationStats RegistrationCache::stats() const {
  RegistrationStats s = stats_;
  s.live = entries_.size();
  return s;
}

}  // namespace arlab::detail
