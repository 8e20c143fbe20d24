#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "context.hpp"
#include "fakegpu.hpp"
#include "ring_index.hpp"
#include "shared_memory.hpp"

namespace fakegpu {

Ring::Ring(std::shared_ptr<detail::Context> ctx) : ctx_(std::move(ctx)) {
  fakegpu_info info{};
  ctx_->ioctl_or_throw(FAKEGPU_IOCTL_INFO, &info, "info " + ctx_->path());
  if (!ring::valid_size(info.ring_entries) ||
      info.sq_map_size <
          FAKEGPU_SQ_ENTRIES_OFFSET + std::uint64_t{info.ring_entries} * sizeof(fakegpu_job))
    throw Error("ring of " + ctx_->path() + ": driver reports an impossible ring layout", EPROTO);
  void* p = ::mmap(nullptr, info.sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx_->fd(),
                   FAKEGPU_MMAP_SQ_OFFSET);
  if (p == MAP_FAILED) {
    const int err = errno;
    throw ctx_->failure("mmap submission ring of " + ctx_->path(), err, "the ring");
  }
  map_ = Mapping(p, info.sq_map_size);
  ctrl_ = static_cast<fakegpu_sq_ctrl*>(p);
  slots_ = reinterpret_cast<fakegpu_job*>(static_cast<std::byte*>(p) + FAKEGPU_SQ_ENTRIES_OFFSET);
  entries_ = info.ring_entries;
  // A ring is created once per context and starts at 0, but a second Ring object
  // on the same context would find it in use: continue where it stands.
  tail_ = claimed_ = detail::load_acquire(&ctrl_->tail);
}

bool Ring::try_push(const fakegpu_job& j) {
  const std::uint32_t head = detail::load_acquire(&ctrl_->head);
  if (!ring::head_plausible(head, claimed_, tail_, entries_))
    throw Error("ring of " + ctx_->path() + ": driver reports head " + std::to_string(head) +
                    " with tail " + std::to_string(tail_) + " and " + std::to_string(claimed_) +
                    " handed over",
                EPROTO);
  if (ring::free_slots(head, tail_, entries_) == 0) return false;
  std::memcpy(&slots_[ring::slot(tail_, entries_)], &j, sizeof j);
  ++tail_;
  // Release: the driver, which loads tail with acquire, sees the entry.
  detail::store_release(&ctrl_->tail, tail_);
  return true;
}

void Ring::push(const fakegpu_job& j) {
  while (!try_push(j)) {
    if (unflushed()) flush();
    // Full, and everything in it is flushed: wait until the oldest batch has been
    // consumed. The driver advances head before it completes an entry's fence, so
    // once the batch's last fence completes, its slots are free.
    if (batches_.empty()) {
      // flush() found every batch complete: the engine consumed them all since the
      // full ring was seen, so there is room now - unless the driver is broken.
      if (try_push(j)) return;
      throw Error("ring of " + ctx_->path() + ": full with nothing in flight", EPROTO);
    }
    const Batch oldest = batches_.front();
    batches_.pop_front();
    ctx_->wait(ring::fence_of(oldest.start, oldest.first_fence, oldest.start + oldest.count - 1),
               -1);
  }
}

Fence Ring::flush() {
  if (unflushed() == 0) return Fence{last_fence_};
  fakegpu_doorbell db{};
  ctx_->ioctl_or_throw(FAKEGPU_IOCTL_DOORBELL, &db, "doorbell of " + ctx_->path());
  if (db.count) {
    batches_.push_back(Batch{claimed_, db.count, db.first_fence});
    claimed_ += db.count;
    last_fence_ = db.last_fence;
    ctx_->last_fence = std::max(ctx_->last_fence, static_cast<std::uint64_t>(db.last_fence));
  }
  // Forget batches the driver has completed, so the queue stays short.
  while (!batches_.empty() &&
         ctx_->poll(ring::fence_of(batches_.front().start, batches_.front().first_fence,
                                   batches_.front().start + batches_.front().count - 1)))
    batches_.pop_front();
  return Fence{last_fence_};
}

}  // namespace fakegpu
