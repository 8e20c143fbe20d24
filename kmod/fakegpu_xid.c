// SPDX-License-Identifier: GPL-2.0
/*
 * fakegpu_xid.c - Xid events: faults that poison a context or lose a device,
 * their kernel-log lines, and root-only fault injection through debugfs.
 *
 * Like NVIDIA's Xid messages, every fault is one line in the kernel log that
 * operators can alert on:
 *
 *   fakegpu: Xid NN, pid P (comm), ctx C: fakegpuM: what happened
 *
 * P and comm are the context's opener (the engine runs in a kworker); for a
 * device-level event, ctx is 0 and P the process that caused it.  The lines
 * share one rate limit (10 per 5 s), so a fault storm cannot flood the log.
 *
 * Two scopes (the table is fakegpu(4), XID EVENTS):
 *  - a context fault (8, 13, 31, 48) poisons that context: ctx->xid is set
 *    once, its waiters wake with EIO, and every later command but INFO and
 *    RESET fails with EIO; other contexts of the device go on;
 *  - a device fault (79) fails every command but INFO and RESET of every
 *    context of the device with ENODEV, and the engine completes queued jobs
 *    with -ENODEV without running them, until FAKEGPU_IOCTL_RESET.
 *
 * debugfs (root only: the directory is 0700 and the write checks
 * CAP_SYS_ADMIN in the initial namespace as well):
 *   /sys/kernel/debug/fakegpu/inject    write "MINOR XID [CTX]"
 *   /sys/kernel/debug/fakegpu/contexts  one line per open context
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/ratelimit.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "fakegpu_internal.h"

static DEFINE_RATELIMIT_STATE(fakegpu_xid_rs, 5 * HZ, 10);
static struct dentry *fakegpu_debugfs_dir;

/* Wake every WAIT of @ctx, whatever fence it waits for (the key passes all). */
static void fakegpu_wake_all(struct fakegpu_ctx *ctx)
{
	u64 all = U64_MAX;

	__wake_up(&ctx->fence_wq, TASK_NORMAL, 0, &all);
}

static void fakegpu_xid_log(unsigned int xid, pid_t pid, const char *comm, u32 ctx_id,
			    unsigned int index, struct va_format *vaf)
{
	if (__ratelimit(&fakegpu_xid_rs))
		pr_err("Xid %u, pid %d (%s), ctx %u: fakegpu%u: %pV\n", xid, pid, comm, ctx_id,
		       index, vaf);
}

/*
 * Poison @ctx with @xid and log it; a context already poisoned keeps its
 * first Xid and logs nothing.  Called by the engine (its own context) and by
 * injection (under fdev->ctx_lock, which keeps @ctx alive); may be called in
 * any process context, holding no spinlock.
 */
void fakegpu_fault(struct fakegpu_ctx *ctx, unsigned int xid, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	if (atomic_cmpxchg(&ctx->xid, 0, xid) != 0)
		return;
	/* The fence page's only other writer is the engine, on other fields. */
	WRITE_ONCE(ctx->fence_page->xid, xid);
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	fakegpu_xid_log(xid, ctx->pid, ctx->comm, ctx->id, ctx->fdev->index, &vaf);
	va_end(args);
	fakegpu_wake_all(ctx);
}

/* 0, -EIO for a poisoned context, -ENODEV while its device is lost. */
int fakegpu_ctx_health(struct fakegpu_ctx *ctx)
{
	if (atomic_read(&ctx->xid))
		return -EIO;
	if (atomic_read(&ctx->fdev->lost_xid))
		return -ENODEV;
	return 0;
}

/* FAKEGPU_IOCTL_RESET: the device works again; poisoned contexts stay so. */
void fakegpu_device_reset(struct fakegpu_device *fdev)
{
	atomic_set(&fdev->lost_xid, 0);
}

static void fakegpu_log_device(struct fakegpu_device *fdev, unsigned int xid, const char *fmt, ...)
{
	char comm[TASK_COMM_LEN];
	struct va_format vaf;
	va_list args;

	get_task_comm(comm, current);
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	fakegpu_xid_log(xid, task_tgid_nr(current), comm, 0, fdev->index, &vaf);
	va_end(args);
}

/*
 * Inject @xid into @fdev, or only into its context @ctx_id (0: all).
 *   13  armed on the next job of each context (ctx->pending_xid);
 *   48  poisons at once each context holding device memory (or @ctx_id);
 *   79  loses the device (only without @ctx_id).
 * 0, -EINVAL for another Xid or a context id with 79, -ESRCH when @ctx_id is
 * not a context of this device.
 */
static int fakegpu_inject(struct fakegpu_device *fdev, unsigned int xid, u32 ctx_id)
{
	struct fakegpu_ctx *ctx;
	bool found = false;

	if (xid == FAKEGPU_XID_OFF_BUS) {
		if (ctx_id)
			return -EINVAL;
		if (atomic_cmpxchg(&fdev->lost_xid, 0, xid) != 0)
			return 0; /* already lost */
		fakegpu_log_device(fdev, xid,
				   "GPU has fallen off the bus (injected): every context fails with ENODEV until RESET");
		mutex_lock(&fdev->ctx_lock);
		list_for_each_entry(ctx, &fdev->ctxs, dev_link)
			fakegpu_wake_all(ctx);
		mutex_unlock(&fdev->ctx_lock);
		return 0;
	}
	if (xid != FAKEGPU_XID_ENGINE && xid != FAKEGPU_XID_ECC)
		return -EINVAL;

	mutex_lock(&fdev->ctx_lock);
	list_for_each_entry(ctx, &fdev->ctxs, dev_link) {
		if (ctx_id && ctx->id != ctx_id)
			continue;
		found = true;
		if (xid == FAKEGPU_XID_ENGINE)
			atomic_set(&ctx->pending_xid, xid);
		else if (ctx_id || atomic64_read(&ctx->mem_used))
			fakegpu_fault(ctx, xid,
				      "double-bit ECC error in device memory (injected): the context's %lld bytes of buffers are lost",
				      (long long)atomic64_read(&ctx->mem_used));
	}
	mutex_unlock(&fdev->ctx_lock);
	return ctx_id && !found ? -ESRCH : 0;
}

static ssize_t fakegpu_inject_write(struct file *file, const char __user *ubuf, size_t len,
				    loff_t *ppos)
{
	struct fakegpu_device *fdev;
	unsigned int minor, xid;
	u32 ctx_id = 0;
	char buf[64];
	int n, ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	n = sscanf(buf, "%u %u %u", &minor, &xid, &ctx_id);
	if (n < 2)
		return -EINVAL;
	fdev = fakegpu_device_get(minor);
	if (!fdev)
		return -ENODEV;
	ret = fakegpu_inject(fdev, xid, n == 3 ? ctx_id : 0);
	return ret ? ret : len;
}

static const struct file_operations fakegpu_inject_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = fakegpu_inject_write,
	.llseek = no_llseek,
};

/* One line per open context of every device: what `mrun gpu ps` shows as root. */
static int fakegpu_contexts_show(struct seq_file *m, void *unused)
{
	struct fakegpu_device *fdev;
	struct fakegpu_ctx *ctx;
	unsigned int i;
	u64 issued;

	seq_puts(m, "device ctx pid comm mem_bytes handles jobs_in_flight xid\n");
	for (i = 0; (fdev = fakegpu_device_get(i)); i++) {
		mutex_lock(&fdev->ctx_lock);
		list_for_each_entry(ctx, &fdev->ctxs, dev_link) {
			spin_lock(&ctx->queue_lock);
			issued = ctx->last_fence;
			spin_unlock(&ctx->queue_lock);
			seq_printf(m, "fakegpu%u %u %d %s %lld %d %llu %d\n", i, ctx->id, ctx->pid,
				   ctx->comm, (long long)atomic64_read(&ctx->mem_used),
				   atomic_read(&ctx->nr_handles),
				   issued - (u64)atomic64_read(&ctx->completed),
				   atomic_read(&ctx->xid));
		}
		mutex_unlock(&fdev->ctx_lock);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fakegpu_contexts);

/* Errors are ignored, as debugfs asks: the driver works without it. */
int fakegpu_debugfs_init(void)
{
	fakegpu_debugfs_dir = debugfs_create_dir("fakegpu", NULL);
	debugfs_create_file("inject", 0200, fakegpu_debugfs_dir, NULL, &fakegpu_inject_fops);
	debugfs_create_file("contexts", 0400, fakegpu_debugfs_dir, NULL, &fakegpu_contexts_fops);
	return 0;
}

void fakegpu_debugfs_exit(void)
{
	debugfs_remove(fakegpu_debugfs_dir);
}
