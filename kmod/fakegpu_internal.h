/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fakegpu_internal.h - objects shared by the files of fakegpu.ko.
 *
 *   fakegpu_main.c    module parameters, char devices, class, control node
 *   fakegpu_ctx.c     per-open contexts: open/release and the ioctl table
 *   fakegpu_bo.c      buffer objects: allocation, quotas, handles, mmap
 *   fakegpu_engine.c  jobs: validation, the engine worker, fences, rings
 *   fakegpu_mmap.c    mmap of the fence page, the submission ring, buffers
 *   fakegpu_xid.c     Xid events: faults, poisoned contexts, debugfs injection
 *
 * Object lifetimes, from longest to shortest:
 *
 *   module  >  struct fakegpu_device  >  struct fakegpu_ctx  >  struct fakegpu_bo
 *
 * A ctx lives from open() to release().  release() runs only after the last
 * reference to the file is gone, and every vma of the file holds one, so no
 * mapping can outlive its ctx.  A bo is referenced by its handle, by queued
 * jobs and by vmas; release() cancels the jobs and drops the handles, so the
 * last bo of a ctx is always freed before the ctx itself.  The module cannot
 * be unloaded while a file is open (cdev owner = THIS_MODULE).
 */
#ifndef FAKEGPU_INTERNAL_H
#define FAKEGPU_INTERNAL_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/version.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "uapi/fakegpu.h"

/* Entries of the submission ring (power of two); reported by INFO. */
#define FAKEGPU_RING_ENTRIES 1024u
/* Handles are 1..FAKEGPU_HANDLE_MAX, so (handle << 32) fits in an mmap offset. */
#define FAKEGPU_HANDLE_MAX 0xffffffu

/* Module parameters, read-only after load (fakegpu_main.c). */
extern unsigned int fakegpu_ndev;
extern unsigned long fakegpu_mem_quota;
extern unsigned int fakegpu_handle_quota;
extern unsigned long fakegpu_vram_size;
extern unsigned int fakegpu_max_queued;
extern unsigned int fakegpu_job_timeout_ms;

/* The workqueue every context's engine runs on. */
extern struct workqueue_struct *fakegpu_wq;

/* Xid event codes (fakegpu(4), XID EVENTS); the numbers are NVIDIA's. */
#define FAKEGPU_XID_HANG 8       /* a job ran past job_timeout_ms */
#define FAKEGPU_XID_ENGINE 13    /* graphics engine exception (injected) */
#define FAKEGPU_XID_MMU 31       /* a job touched a buffer the context lacks */
#define FAKEGPU_XID_ECC 48       /* double-bit ECC error (injected) */
#define FAKEGPU_XID_OFF_BUS 79   /* the GPU fell off the bus (injected) */

/*
 * One GPU, /dev/fakegpu<index>.  Statistics, the memory pool and the
 * device-level fault are atomics.  ctx_lock (a mutex) protects ctxs, the
 * list of open contexts; it is taken by open, release, fault injection and
 * the debugfs readers, in process context only.  Lock order: ctx_lock, then
 * a context's queue_lock (debugfs reads last_fence) or its wait-queue lock
 * (waking its waiters); nothing takes ctx_lock while holding either.
 */
struct fakegpu_device {
	unsigned int index;
	atomic64_t vram_used;      /* bytes of live buffers, all contexts */
	atomic64_t jobs_completed; /* zeroed by FAKEGPU_IOCTL_RESET */
	atomic_t reset_count;
	atomic_t lost_xid;         /* FAKEGPU_XID_OFF_BUS until RESET, else 0 */
	struct mutex ctx_lock;
	struct list_head ctxs;     /* of struct fakegpu_ctx, via dev_link */
};

/* A buffer object: zeroed vmalloc_user() memory that user space can mmap. */
struct fakegpu_bo {
	/*
	 * One reference for the handle (dropped by FREE or release), one per
	 * queued ioctl job naming it, one per vma mapping it, one for a ring
	 * job while it runs.  The last put frees the memory and uncharges it.
	 */
	struct kref ref;
	struct fakegpu_ctx *ctx; /* owner, charged for size; outlives the bo */
	void *vaddr;
	size_t size; /* multiple of PAGE_SIZE */
};

/*
 * An entry of ctx->queue: either one job submitted by ioctl (validated, with
 * its buffers referenced) or a batch of ring entries claimed by a doorbell
 * (validated one by one when the engine copies them out of the ring).
 */
struct fakegpu_queued {
	struct list_head link;
	u64 first_fence;
	bool from_ring;
	/* ring batch */
	u32 ring_start;
	u32 count;
	/* ioctl job */
	struct fakegpu_job job;
	struct fakegpu_bo *dst;
	struct fakegpu_bo *src;
};

/*
 * Everything one open() of /dev/fakegpuN owns (file->private_data).
 *
 * Whether it may do work is the file's, not the context's: file->f_mode is
 * fixed at open, and without FMODE_WRITE every ioctl that creates, changes or
 * submits is EBADF and the ring cannot be mapped (fakegpu_cmd_needs_write(),
 * fakegpu_mmap_sq()).  So a read-only context never has buffers, fences or a
 * ring, and nothing below needs a mode check of its own.
 */
struct fakegpu_ctx {
	struct fakegpu_device *fdev;
	struct list_head dev_link; /* in fdev->ctxs, under fdev->ctx_lock */

	/* Who opened it, for the kernel log and fdinfo; fixed at open. */
	u32 id;        /* module-wide, never 0 */
	pid_t pid;     /* thread-group id in the initial pid namespace */
	char comm[TASK_COMM_LEN];

	/*
	 * Faults (fakegpu_xid.c).  xid: the Xid that poisoned the context, set
	 * once (cmpxchg from 0), never cleared; read locklessly by the ioctls,
	 * mmap, WAIT and the engine, so a call racing the fault may still
	 * succeed, as on a GPU whose fault is asynchronous.  pending_xid: an
	 * injected fault armed for the engine's next job (xchg to 0 there).
	 */
	atomic_t xid;
	atomic_t pending_xid;

	/*
	 * handle -> bo.  The xarray's own spinlock (xa_lock) serialises
	 * insert, erase, and lookup-plus-kref_get; next_handle is the cursor of
	 * xa_alloc_cyclic, also under xa_lock, so a freed handle is not
	 * handed out again soon (stale handles fail with ENOENT).
	 */
	struct xarray buffers;
	u32 next_handle;
	atomic_t nr_handles;  /* live handles, against handle_quota */
	atomic64_t mem_used;  /* bytes of live bos, against mem_quota */

	/* vmalloc_user page, written only by the engine, mapped read-only. */
	struct fakegpu_fence_page *fence_page;
	/* Kernel copy of fence_page->completed, what WAIT trusts. */
	atomic64_t completed;
	wait_queue_head_t fence_wq;

	/*
	 * The submission ring, created by the first mmap of it.  sq_lock
	 * serialises that creation only (taken under mmap_lock; nothing that
	 * holds it touches user memory); afterwards sq never changes until
	 * release, so readers use smp_load_acquire() without the lock.
	 */
	struct mutex sq_lock;
	struct fakegpu_sq_ctrl *sq;
	size_t sq_size;
	/* Entries the engine has copied out; written by the engine only. */
	u32 sq_head;

	/*
	 * queue_lock protects the submission state below.  Fences are handed
	 * out under it in the same order entries are queued, so the engine,
	 * which runs the queue in order, completes fences in order.  Only taken
	 * in process context (ioctl, worker), never held across a sleep.
	 */
	spinlock_t queue_lock;
	struct list_head queue;  /* of struct fakegpu_queued */
	u64 last_fence;          /* last fence handed out */
	u32 sq_claimed;          /* ring entries handed to the queue */
	unsigned int nr_queued;  /* ioctl jobs in the queue, vs max_queued */
	bool closing;            /* release() started: the engine stops */

	struct work_struct engine;
};

/* fakegpu_ctx.c */
long fakegpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
long fakegpu_ctl_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
int fakegpu_open(struct inode *inode, struct file *file);
int fakegpu_release(struct inode *inode, struct file *file);
struct seq_file;
void fakegpu_show_fdinfo(struct seq_file *m, struct file *file);
struct fakegpu_device *fakegpu_device_get(unsigned int minor);

/* fakegpu_bo.c */
int fakegpu_bo_create(struct fakegpu_ctx *ctx, u64 size, u32 *handle, u64 *alloc_size);
int fakegpu_bo_free_handle(struct fakegpu_ctx *ctx, u32 handle);
struct fakegpu_bo *fakegpu_bo_lookup(struct fakegpu_ctx *ctx, u32 handle);
void fakegpu_bo_put(struct fakegpu_bo *bo);
void fakegpu_bo_drop_all_handles(struct fakegpu_ctx *ctx);
int fakegpu_bo_mmap(struct fakegpu_ctx *ctx, u32 handle, struct vm_area_struct *vma);

/* fakegpu_engine.c */
int fakegpu_engine_init_cache(void);
void fakegpu_engine_destroy_cache(void);
void fakegpu_engine_init(struct fakegpu_ctx *ctx);
void fakegpu_engine_stop(struct fakegpu_ctx *ctx);
int fakegpu_submit_job(struct fakegpu_ctx *ctx, const struct fakegpu_job *job, u64 *fence);
int fakegpu_doorbell(struct fakegpu_ctx *ctx, u32 *count, u64 *first, u64 *last);
int fakegpu_wait_fence(struct fakegpu_ctx *ctx, u64 fence, s64 timeout_ns);

/* fakegpu_mmap.c */
int fakegpu_mmap(struct file *file, struct vm_area_struct *vma);

/* fakegpu_xid.c */
void fakegpu_fault(struct fakegpu_ctx *ctx, unsigned int xid, const char *fmt, ...)
	__printf(3, 4);
int fakegpu_ctx_health(struct fakegpu_ctx *ctx);
void fakegpu_device_reset(struct fakegpu_device *fdev);
int fakegpu_debugfs_init(void);
void fakegpu_debugfs_exit(void);

/* vm_flags became read-only in 6.3; keep building on both sides of it. */
static inline void fakegpu_vma_clear_flags(struct vm_area_struct *vma, unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

#endif /* FAKEGPU_INTERNAL_H */
