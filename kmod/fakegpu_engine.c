// SPDX-License-Identifier: GPL-2.0
/*
 * fakegpu_engine.c - jobs, the engine that runs them, and fences.
 *
 * Two ways in, one queue:
 *   - FAKEGPU_IOCTL_SUBMIT validates one job now (its buffers referenced),
 *     hands out its fence and queues it: one syscall per job;
 *   - the submission ring: user space writes jobs into the shared ring and
 *     publishes them by moving tail; one FAKEGPU_IOCTL_DOORBELL claims every
 *     published entry as one queue item and hands out a block of fences.
 *     The engine copies each entry out of the ring before validating it, so
 *     user space rewriting the ring meanwhile can only hurt its own jobs.
 *
 * The engine is a work item per context on fakegpu_wq: it runs the queue in
 * order, later than the ioctl that queued the work (like a GPU raising an
 * interrupt), and completes each fence by writing it to the fence page (which
 * user space may map read-only and poll without a syscall) and waking WAIT.
 * A work item never runs concurrently with itself, so the engine is the
 * single writer of the fence page (but for its xid, see fakegpu_fault()),
 * ctx->completed and ctx->sq_head.
 *
 * Faults (fakegpu_xid.c): before each job the engine asks
 * fakegpu_engine_gate().  A poisoned context's remaining jobs are dropped
 * (their fences never complete; WAIT says EIO); on a lost device each job
 * completes with -ENODEV without running.  Execution-time faults poison the
 * context: a ring entry naming a buffer the context does not have (freed, or
 * another context's) is an MMU fault, Xid 31; a job running past
 * job_timeout_ms is a hang, Xid 8.  A malformed ring entry is not a fault:
 * it completes with -EINVAL, as before.
 */
#include <linux/crc32.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/nospec.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait.h>

#include "fakegpu_internal.h"

/* Large fills and copies are done in chunks, yielding the CPU in between. */
#define FAKEGPU_CHUNK (1UL << 20)

static struct kmem_cache *fakegpu_queued_cache;

int fakegpu_engine_init_cache(void)
{
	fakegpu_queued_cache = KMEM_CACHE(fakegpu_queued, 0);
	return fakegpu_queued_cache ? 0 : -ENOMEM;
}

void fakegpu_engine_destroy_cache(void)
{
	kmem_cache_destroy(fakegpu_queued_cache);
}

/* ---- validation ---- */

/* Which fields of struct fakegpu_job an op reads; all others must be zero. */
struct fakegpu_op_desc {
	bool dst;    /* dst_handle, dst_offset */
	bool src;    /* src_handle, src_offset */
	bool length; /* length, which must then be non-zero */
	bool value;
};

static const struct fakegpu_op_desc fakegpu_ops[FAKEGPU_OP_COUNT] = {
	[FAKEGPU_OP_NOP] = { },
	[FAKEGPU_OP_FILL] = { .dst = true, .length = true, .value = true },
	[FAKEGPU_OP_COPY] = { .dst = true, .src = true, .length = true },
	[FAKEGPU_OP_CHECKSUM] = { .dst = true, .src = true, .length = true },
	[FAKEGPU_OP_DELAY] = { .length = true },
};

/* [offset, offset + length) lies inside bo, without overflow. */
static bool fakegpu_range_ok(const struct fakegpu_bo *bo, u64 offset, u64 length)
{
	u64 end;

	return length && !check_add_overflow(offset, length, &end) && end <= bo->size;
}

static int fakegpu_check_ranges(const struct fakegpu_job *job,
				const struct fakegpu_bo *dst, const struct fakegpu_bo *src)
{
	switch (job->op) {
	case FAKEGPU_OP_FILL:
		if (!IS_ALIGNED(job->dst_offset | job->length, sizeof(u32)))
			return -EINVAL;
		return fakegpu_range_ok(dst, job->dst_offset, job->length) ? 0 : -EINVAL;
	case FAKEGPU_OP_COPY:
		if (!fakegpu_range_ok(dst, job->dst_offset, job->length) ||
		    !fakegpu_range_ok(src, job->src_offset, job->length))
			return -EINVAL;
		/* Like a copy engine: overlapping ranges are refused, not guessed at. */
		if (dst == src && job->dst_offset < job->src_offset + job->length &&
		    job->src_offset < job->dst_offset + job->length)
			return -EINVAL;
		return 0;
	case FAKEGPU_OP_CHECKSUM:
		if (!IS_ALIGNED(job->dst_offset, sizeof(u32)) ||
		    !fakegpu_range_ok(dst, job->dst_offset, sizeof(u32)) ||
		    !fakegpu_range_ok(src, job->src_offset, job->length))
			return -EINVAL;
		return 0;
	default:
		return 0;
	}
}

static void fakegpu_job_release(struct fakegpu_bo *dst, struct fakegpu_bo *src)
{
	if (dst)
		fakegpu_bo_put(dst);
	if (src)
		fakegpu_bo_put(src);
}

/*
 * Check a job (a private copy: never read twice from user memory) against
 * this context and take references on its buffers.  0, -EINVAL for a
 * malformed job, -ENOENT for a handle this context does not have.
 */
static int fakegpu_job_prepare(struct fakegpu_ctx *ctx, const struct fakegpu_job *job,
			       struct fakegpu_bo **dst, struct fakegpu_bo **src)
{
	const struct fakegpu_op_desc *op;
	int ret;

	*dst = NULL;
	*src = NULL;
	if (job->op >= FAKEGPU_OP_COUNT)
		return -EINVAL;
	op = &fakegpu_ops[array_index_nospec(job->op, FAKEGPU_OP_COUNT)];

	if (job->flags || job->pad || job->reserved[0] || job->reserved[1])
		return -EINVAL;
	if ((!op->dst && (job->dst_handle || job->dst_offset)) ||
	    (!op->src && (job->src_handle || job->src_offset)) ||
	    (!op->value && job->value) || (op->length != !!job->length))
		return -EINVAL;

	if (op->dst) {
		*dst = fakegpu_bo_lookup(ctx, job->dst_handle);
		if (!*dst)
			return -ENOENT;
	}
	if (op->src) {
		*src = fakegpu_bo_lookup(ctx, job->src_handle);
		if (!*src) {
			ret = -ENOENT;
			goto err;
		}
	}
	ret = fakegpu_check_ranges(job, *dst, *src);
	if (ret)
		goto err;
	return 0;
err:
	fakegpu_job_release(*dst, *src);
	*dst = NULL;
	*src = NULL;
	return ret;
}

/* ---- execution (engine only) ---- */

static void fakegpu_run_fill(const struct fakegpu_job *job, struct fakegpu_bo *dst)
{
	u8 *p = (u8 *)dst->vaddr + job->dst_offset;
	u64 left = job->length;

	while (left) {
		size_t n = min_t(u64, left, FAKEGPU_CHUNK);

		memset32((u32 *)p, job->value, n / sizeof(u32));
		p += n;
		left -= n;
		cond_resched();
	}
}

static void fakegpu_run_copy(const struct fakegpu_job *job, struct fakegpu_bo *dst,
			     struct fakegpu_bo *src)
{
	u8 *d = (u8 *)dst->vaddr + job->dst_offset;
	const u8 *s = (const u8 *)src->vaddr + job->src_offset;
	u64 left = job->length;

	while (left) {
		size_t n = min_t(u64, left, FAKEGPU_CHUNK);

		memcpy(d, s, n);
		d += n;
		s += n;
		left -= n;
		cond_resched();
	}
}

static void fakegpu_run_checksum(const struct fakegpu_job *job, struct fakegpu_bo *dst,
				 struct fakegpu_bo *src)
{
	const u8 *s = (const u8 *)src->vaddr + job->src_offset;
	u64 left = job->length;
	u32 crc = ~0u;

	while (left) {
		size_t n = min_t(u64, left, FAKEGPU_CHUNK);

		crc = crc32_le(crc, s, n);
		s += n;
		left -= n;
		cond_resched();
	}
	/* zlib's crc32; the result lands in device memory, like a GPU's would. */
	*(u32 *)((u8 *)dst->vaddr + job->dst_offset) = ~crc;
}

/*
 * Occupy the engine for job->length ns, sleeping in slices so that release()
 * (ctx->closing) and faults are noticed within 10 ms.  0 when done, -ETIMEDOUT
 * once job_timeout_ms has passed first (a hang), -ECANCELED on release(),
 * -EIO or -ENODEV when the context is poisoned or the device lost meanwhile.
 */
static int fakegpu_run_delay(struct fakegpu_ctx *ctx, const struct fakegpu_job *job)
{
	u64 timeout_ns = (u64)fakegpu_job_timeout_ms * NSEC_PER_MSEC;
	u64 want = min_t(u64, job->length, timeout_ns);
	ktime_t start = ktime_get();
	u64 spent;
	int ret;

	for (;;) {
		spent = ktime_to_ns(ktime_sub(ktime_get(), start));
		if (spent >= want)
			break;
		if (READ_ONCE(ctx->closing))
			return -ECANCELED;
		ret = fakegpu_ctx_health(ctx);
		if (ret)
			return ret;
		spent = min_t(u64, want - spent, 10 * NSEC_PER_MSEC);
		usleep_range(spent / NSEC_PER_USEC, spent / NSEC_PER_USEC + 100);
	}
	return job->length > timeout_ns ? -ETIMEDOUT : 0;
}

/* 0, or what fakegpu_run_delay() returns. */
static int fakegpu_job_run(struct fakegpu_ctx *ctx, const struct fakegpu_job *job,
			   struct fakegpu_bo *dst, struct fakegpu_bo *src)
{
	switch (job->op) {
	case FAKEGPU_OP_DELAY:
		return fakegpu_run_delay(ctx, job);
	case FAKEGPU_OP_FILL:
		fakegpu_run_fill(job, dst);
		break;
	case FAKEGPU_OP_COPY:
		fakegpu_run_copy(job, dst, src);
		break;
	case FAKEGPU_OP_CHECKSUM:
		fakegpu_run_checksum(job, dst, src);
		break;
	}
	return 0;
}

/* The job at @fence has run; poison the context if it hung (@err -ETIMEDOUT). */
static bool fakegpu_job_hung(struct fakegpu_ctx *ctx, u64 fence, int err)
{
	if (err != -ETIMEDOUT)
		return false;
	fakegpu_fault(ctx, FAKEGPU_XID_HANG,
		      "GPU stopped processing: the job at fence %llu ran past job_timeout_ms (%u ms)",
		      fence, fakegpu_job_timeout_ms);
	return true;
}

/*
 * May the engine run the job holding @fence?  0: yes.  -ENODEV: the device is
 * lost; complete the job with that error without running it.  -EIO: the
 * context is poisoned (an injected Xid 13 armed for this job poisons it
 * here); drop the job.
 */
static int fakegpu_engine_gate(struct fakegpu_ctx *ctx, u64 fence)
{
	unsigned int xid;
	int health = fakegpu_ctx_health(ctx);

	if (health)
		return health;
	xid = atomic_xchg(&ctx->pending_xid, 0);
	if (xid) {
		fakegpu_fault(ctx, xid, "graphics engine exception at fence %llu (injected)", fence);
		return -EIO;
	}
	return 0;
}

/* Publish that the job holding @fence finished with @err (0 or -errno). */
static void fakegpu_complete(struct fakegpu_ctx *ctx, u64 fence, int err)
{
	struct fakegpu_fence_page *fp = ctx->fence_page;

	if (err) {
		WRITE_ONCE(fp->errors, fp->errors + 1);
		WRITE_ONCE(fp->last_error_fence, fence);
		WRITE_ONCE(fp->last_error, err);
	}
	atomic64_inc(&ctx->fdev->jobs_completed);
	/* Release: whoever sees the new fence also sees the job's results. */
	smp_store_release(&fp->completed, fence);
	atomic64_set_release(&ctx->completed, fence);
	/*
	 * wq_has_sleeper() has the barrier that pairs with prepare_to_wait().
	 * The fence is the wake-up key: only waiters it satisfies are woken,
	 * so a WAIT for the end of a long batch sleeps through the batch
	 * instead of waking once per job.
	 */
	if (wq_has_sleeper(&ctx->fence_wq))
		__wake_up(&ctx->fence_wq, TASK_NORMAL, 0, &fence);
}

/* Copy one ring entry field by field: user space may be rewriting it. */
static void fakegpu_ring_read(const struct fakegpu_job *slot, struct fakegpu_job *job)
{
	job->op = READ_ONCE(slot->op);
	job->flags = READ_ONCE(slot->flags);
	job->dst_handle = READ_ONCE(slot->dst_handle);
	job->src_handle = READ_ONCE(slot->src_handle);
	job->dst_offset = READ_ONCE(slot->dst_offset);
	job->src_offset = READ_ONCE(slot->src_offset);
	job->length = READ_ONCE(slot->length);
	job->value = READ_ONCE(slot->value);
	job->pad = READ_ONCE(slot->pad);
	job->reserved[0] = READ_ONCE(slot->reserved[0]);
	job->reserved[1] = READ_ONCE(slot->reserved[1]);
}

/* Runs the entries of a doorbell's batch; stops early if the context dies. */
static void fakegpu_run_ring_batch(struct fakegpu_ctx *ctx, const struct fakegpu_queued *q)
{
	struct fakegpu_sq_ctrl *sq = ctx->sq;
	const struct fakegpu_job *entries =
		(const struct fakegpu_job *)((u8 *)sq + FAKEGPU_SQ_ENTRIES_OFFSET);
	struct fakegpu_bo *dst, *src;
	struct fakegpu_job job;
	u32 i;
	int err;

	for (i = 0; i < q->count; i++) {
		u32 index = q->ring_start + i;

		if (READ_ONCE(ctx->closing))
			return; /* release() is waiting: the rest is cancelled */
		err = fakegpu_engine_gate(ctx, q->first_fence + i);
		if (err == -EIO)
			return; /* poisoned: the rest is dropped */

		fakegpu_ring_read(&entries[index & (FAKEGPU_RING_ENTRIES - 1)], &job);
		/*
		 * The entry is copied: give its slot back.  ctx->sq_head first,
		 * so a doorbell that follows a read of sq->head sees at least it.
		 */
		WRITE_ONCE(ctx->sq_head, index + 1);
		smp_store_release(&sq->head, index + 1);

		if (!err)
			err = fakegpu_job_prepare(ctx, &job, &dst, &src);
		if (err == -ENOENT) {
			fakegpu_fault(ctx, FAKEGPU_XID_MMU,
				      "MMU fault: the job at fence %llu names a buffer this context does not have (freed, or another context's)",
				      q->first_fence + i);
			return;
		}
		if (!err) {
			err = fakegpu_job_run(ctx, &job, dst, src);
			fakegpu_job_release(dst, src);
			if (fakegpu_job_hung(ctx, q->first_fence + i, err) || err == -ECANCELED ||
			    err == -EIO)
				return;
		}
		fakegpu_complete(ctx, q->first_fence + i, err);
		if ((i & 63) == 63)
			cond_resched();
	}
}

static void fakegpu_engine_work(struct work_struct *work)
{
	struct fakegpu_ctx *ctx = container_of(work, struct fakegpu_ctx, engine);
	struct fakegpu_queued *q;
	int err;

	for (;;) {
		spin_lock(&ctx->queue_lock);
		q = ctx->closing ? NULL :
			list_first_entry_or_null(&ctx->queue, struct fakegpu_queued, link);
		if (q) {
			list_del(&q->link);
			if (!q->from_ring)
				ctx->nr_queued--;
		}
		spin_unlock(&ctx->queue_lock);
		if (!q)
			return;

		if (q->from_ring) {
			fakegpu_run_ring_batch(ctx, q);
		} else {
			err = fakegpu_engine_gate(ctx, q->first_fence);
			if (!err)
				err = fakegpu_job_run(ctx, &q->job, q->dst, q->src);
			fakegpu_job_release(q->dst, q->src);
			if (err != -EIO && err != -ECANCELED &&
			    !fakegpu_job_hung(ctx, q->first_fence, err))
				fakegpu_complete(ctx, q->first_fence, err);
		}
		kmem_cache_free(fakegpu_queued_cache, q);
		cond_resched();
	}
}

void fakegpu_engine_init(struct fakegpu_ctx *ctx)
{
	INIT_WORK(&ctx->engine, fakegpu_engine_work);
}

/*
 * release(): stop the engine and cancel what is still queued.  After
 * cancel_work_sync() the work is neither queued nor running, and nothing can
 * queue it again (no ioctl can run on a file being released).
 */
void fakegpu_engine_stop(struct fakegpu_ctx *ctx)
{
	struct fakegpu_queued *q, *tmp;
	LIST_HEAD(cancelled);

	spin_lock(&ctx->queue_lock);
	WRITE_ONCE(ctx->closing, true); /* also read locklessly between ring entries */
	spin_unlock(&ctx->queue_lock);

	cancel_work_sync(&ctx->engine);

	spin_lock(&ctx->queue_lock);
	list_splice_init(&ctx->queue, &cancelled);
	ctx->nr_queued = 0;
	spin_unlock(&ctx->queue_lock);

	/* Outside the spinlock: dropping a buffer reference may vfree(). */
	list_for_each_entry_safe(q, tmp, &cancelled, link) {
		list_del(&q->link);
		if (!q->from_ring)
			fakegpu_job_release(q->dst, q->src);
		kmem_cache_free(fakegpu_queued_cache, q);
	}
}

/* ---- the two submission paths ---- */

int fakegpu_submit_job(struct fakegpu_ctx *ctx, const struct fakegpu_job *job, u64 *fence)
{
	struct fakegpu_queued *q;
	int ret;

	q = kmem_cache_zalloc(fakegpu_queued_cache, GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	q->job = *job;
	ret = fakegpu_job_prepare(ctx, &q->job, &q->dst, &q->src);
	if (ret)
		goto err_free;

	spin_lock(&ctx->queue_lock);
	if (ctx->nr_queued >= fakegpu_max_queued) {
		spin_unlock(&ctx->queue_lock);
		ret = -EBUSY; /* wait for a fence, then submit again */
		goto err_release;
	}
	q->first_fence = ++ctx->last_fence;
	list_add_tail(&q->link, &ctx->queue);
	ctx->nr_queued++;
	*fence = q->first_fence;
	spin_unlock(&ctx->queue_lock);

	queue_work(fakegpu_wq, &ctx->engine);
	return 0;

err_release:
	fakegpu_job_release(q->dst, q->src);
err_free:
	kmem_cache_free(fakegpu_queued_cache, q);
	return ret;
}

int fakegpu_doorbell(struct fakegpu_ctx *ctx, u32 *count, u64 *first, u64 *last)
{
	struct fakegpu_sq_ctrl *sq = smp_load_acquire(&ctx->sq);
	struct fakegpu_queued *q;
	u32 tail, n;

	*count = 0;
	*first = 0;
	*last = 0;
	if (!sq)
		return -EINVAL; /* the ring is created by mmap()ing it */

	q = kmem_cache_zalloc(fakegpu_queued_cache, GFP_KERNEL);
	if (!q)
		return -ENOMEM;

	/* Acquire: the entries written before tail was published are visible. */
	tail = smp_load_acquire(&sq->tail);

	spin_lock(&ctx->queue_lock);
	/*
	 * tail is user-controlled: it may not move backwards past what was
	 * claimed, nor run more than a ring ahead of what the engine consumed.
	 */
	if ((u32)(tail - ctx->sq_claimed) > FAKEGPU_RING_ENTRIES ||
	    (u32)(tail - READ_ONCE(ctx->sq_head)) > FAKEGPU_RING_ENTRIES) {
		spin_unlock(&ctx->queue_lock);
		kmem_cache_free(fakegpu_queued_cache, q);
		return -EINVAL;
	}
	n = tail - ctx->sq_claimed;
	if (n) {
		q->from_ring = true;
		q->ring_start = ctx->sq_claimed;
		q->count = n;
		q->first_fence = ctx->last_fence + 1;
		ctx->last_fence += n;
		ctx->sq_claimed = tail;
		list_add_tail(&q->link, &ctx->queue);
		*count = n;
		*first = q->first_fence;
		*last = ctx->last_fence;
	}
	spin_unlock(&ctx->queue_lock);

	if (!n) {
		kmem_cache_free(fakegpu_queued_cache, q);
		return 0;
	}
	queue_work(fakegpu_wq, &ctx->engine);
	return 0;
}

/* ---- fences ---- */

static bool fakegpu_fence_done(struct fakegpu_ctx *ctx, u64 fence)
{
	return atomic64_read_acquire(&ctx->completed) >= fence;
}

/* A sleeper in WAIT, woken only once the engine completes its fence. */
struct fakegpu_fence_waiter {
	struct wait_queue_entry entry;
	u64 fence;
};

static int fakegpu_fence_wake(struct wait_queue_entry *entry, unsigned int mode, int sync, void *key)
{
	struct fakegpu_fence_waiter *w = container_of(entry, struct fakegpu_fence_waiter, entry);

	if (*(const u64 *)key < w->fence)
		return 0; /* not ours yet: stay asleep */
	return autoremove_wake_function(entry, mode, sync, key);
}

/*
 * Sleep until @fence completes, a signal arrives, the context is poisoned or
 * its device lost (fakegpu_fault() and injection wake every waiter), or
 * @deadline (absolute, CLOCK_MONOTONIC; NULL: none) passes.  0, -ERESTARTSYS,
 * -ETIMEDOUT, -EIO or -ENODEV.
 */
static int fakegpu_fence_sleep(struct fakegpu_ctx *ctx, u64 fence, ktime_t *deadline)
{
	struct fakegpu_fence_waiter w = { .fence = fence };
	int ret = 0;

	init_wait_entry(&w.entry, 0);
	w.entry.func = fakegpu_fence_wake;
	for (;;) {
		prepare_to_wait(&ctx->fence_wq, &w.entry, TASK_INTERRUPTIBLE);
		/*
		 * The fault first: on a lost device the engine completes the
		 * job with -ENODEV right after the wake-up, and the waiter
		 * must still learn that the device is gone.
		 */
		ret = fakegpu_ctx_health(ctx);
		if (ret || fakegpu_fence_done(ctx, fence))
			break;
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		if (!deadline) {
			schedule();
		} else if (schedule_hrtimeout(deadline, HRTIMER_MODE_ABS) == 0 &&
			   !fakegpu_fence_done(ctx, fence)) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	finish_wait(&ctx->fence_wq, &w.entry);
	return ret;
}

int fakegpu_wait_fence(struct fakegpu_ctx *ctx, u64 fence, s64 timeout_ns)
{
	ktime_t deadline;
	u64 issued;
	int ret;

	spin_lock(&ctx->queue_lock);
	issued = ctx->last_fence;
	spin_unlock(&ctx->queue_lock);
	if (fence == 0 || fence > issued)
		return -EINVAL; /* a fence this context was never given */

	if (fakegpu_fence_done(ctx, fence))
		return 0;
	if (timeout_ns == 0)
		return -EBUSY;
	if (timeout_ns < 0)
		return fakegpu_fence_sleep(ctx, fence, NULL);

	deadline = ktime_add_safe(ktime_get(), ns_to_ktime(timeout_ns));
	ret = fakegpu_fence_sleep(ctx, fence, &deadline);
	/* A restart would wait the whole timeout again: report EINTR instead. */
	return ret == -ERESTARTSYS ? -EINTR : ret;
}
