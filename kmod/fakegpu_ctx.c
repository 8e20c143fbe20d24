// SPDX-License-Identifier: GPL-2.0
/*
 * fakegpu_ctx.c - per-open contexts and the ioctl table.
 *
 * Every ioctl follows the same shape: copy_from_user() of exactly the struct
 * the command number names, check that every flags/pad/reserved field is
 * zero, validate the rest against this context, act, copy_to_user() of the
 * struct.  Commands are matched whole (type, number, direction and size), so
 * an unknown command or a struct of the wrong size is ENOTTY.
 *
 * Before any of that, fakegpu_ioctl() refuses the commands that create,
 * change or submit anything on a file not open for writing (EBADF; see
 * fakegpu_cmd_needs_write()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "fakegpu_internal.h"

static_assert(sizeof(struct fakegpu_job) == 64);
static_assert(sizeof(struct fakegpu_fence_page) == 32);
static_assert(sizeof(struct fakegpu_sq_ctrl) == 128);
static_assert(sizeof(struct fakegpu_info) == 112);
static_assert(sizeof(struct fakegpu_alloc) == 32);
static_assert(sizeof(struct fakegpu_free) == 16);
static_assert(sizeof(struct fakegpu_map) == 32);
static_assert(sizeof(struct fakegpu_submit) == 80);
static_assert(sizeof(struct fakegpu_wait) == 40);
static_assert(sizeof(struct fakegpu_doorbell) == 32);
static_assert(sizeof(struct fakegpu_reset) == 24);

/* Context ids are module-wide and never reused before 2^32 opens. */
static atomic_t fakegpu_ctx_ids = ATOMIC_INIT(0);

static bool all_zero(const u64 *words, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (words[i])
			return false;
	return true;
}

int fakegpu_open(struct inode *inode, struct file *file)
{
	struct fakegpu_device *fdev = fakegpu_device_get(iminor(inode));
	struct fakegpu_ctx *ctx;

	if (!fdev)
		return -ENODEV;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->fence_page = vmalloc_user(PAGE_SIZE);
	if (!ctx->fence_page) {
		kfree(ctx);
		return -ENOMEM;
	}
	ctx->fdev = fdev;
	xa_init_flags(&ctx->buffers, XA_FLAGS_ALLOC1);
	ctx->next_handle = 1;
	atomic_set(&ctx->nr_handles, 0);
	atomic64_set(&ctx->mem_used, 0);
	atomic64_set(&ctx->completed, 0);
	init_waitqueue_head(&ctx->fence_wq);
	mutex_init(&ctx->sq_lock);
	ctx->sq_size = PAGE_ALIGN(FAKEGPU_SQ_ENTRIES_OFFSET +
				  FAKEGPU_RING_ENTRIES * sizeof(struct fakegpu_job));
	spin_lock_init(&ctx->queue_lock);
	INIT_LIST_HEAD(&ctx->queue);
	fakegpu_engine_init(ctx);
	atomic_set(&ctx->xid, 0);
	atomic_set(&ctx->pending_xid, 0);
	do {
		ctx->id = (u32)atomic_inc_return(&fakegpu_ctx_ids);
	} while (!ctx->id);
	ctx->pid = task_tgid_nr(current);
	get_task_comm(ctx->comm, current);

	file->private_data = ctx;
	mutex_lock(&fdev->ctx_lock);
	list_add_tail(&ctx->dev_link, &fdev->ctxs);
	mutex_unlock(&fdev->ctx_lock);
	return nonseekable_open(inode, file);
}

/*
 * The last reference to the file is gone: no ioctl is running and no vma
 * exists.  Stop the engine (jobs still queued are cancelled; their fences
 * never complete, and nobody is left to wait for them), then drop the
 * handles, which frees the buffers.
 */
int fakegpu_release(struct inode *inode, struct file *file)
{
	struct fakegpu_ctx *ctx = file->private_data;
	struct fakegpu_device *fdev = ctx->fdev;

	/* First: injection and the debugfs readers must not find it any more. */
	mutex_lock(&fdev->ctx_lock);
	list_del(&ctx->dev_link);
	mutex_unlock(&fdev->ctx_lock);
	fakegpu_engine_stop(ctx);
	fakegpu_bo_drop_all_handles(ctx);
	xa_destroy(&ctx->buffers);
	WARN_ON_ONCE(atomic64_read(&ctx->mem_used) != 0);
	mutex_destroy(&ctx->sq_lock);
	vfree(ctx->sq);
	vfree(ctx->fence_page);
	kfree(ctx);
	return 0;
}

static void fakegpu_fill_info(struct fakegpu_info *info, const struct fakegpu_device *fdev)
{
	info->abi_version = FAKEGPU_ABI_VERSION;
	info->device_count = fakegpu_ndev;
	info->ring_entries = FAKEGPU_RING_ENTRIES;
	info->sq_map_size = PAGE_ALIGN(FAKEGPU_SQ_ENTRIES_OFFSET +
				       FAKEGPU_RING_ENTRIES * sizeof(struct fakegpu_job));
	info->mem_quota = fakegpu_mem_quota;
	info->handle_quota = fakegpu_handle_quota;
	info->vram_size = fakegpu_vram_size;
	info->driver_version = FAKEGPU_DRIVER_VERSION;
	if (fdev) {
		info->device_index = fdev->index;
		info->vram_used = atomic64_read(&fdev->vram_used);
		info->reset_count = atomic_read(&fdev->reset_count);
		info->jobs_completed = atomic64_read(&fdev->jobs_completed);
		info->device_xid = atomic_read(&fdev->lost_xid);
	} else {
		info->device_index = FAKEGPU_CTL_MINOR;
	}
}

static long fakegpu_ioctl_info(struct fakegpu_ctx *ctx, void __user *uarg)
{
	struct fakegpu_info info;

	if (copy_from_user(&info, uarg, sizeof(info)))
		return -EFAULT;
	if (info.pad || !all_zero(info.reserved, ARRAY_SIZE(info.reserved)))
		return -EINVAL;
	memset(&info, 0, sizeof(info));
	fakegpu_fill_info(&info, ctx ? ctx->fdev : NULL);
	if (ctx) {
		info.ctx_mem_used = atomic64_read(&ctx->mem_used);
		info.ctx_handles = atomic_read(&ctx->nr_handles);
		info.ctx_id = ctx->id;
		info.ctx_xid = atomic_read(&ctx->xid);
	}
	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long fakegpu_ioctl_alloc(struct fakegpu_ctx *ctx, void __user *uarg)
{
	struct fakegpu_alloc req;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved)
		return -EINVAL;
	ret = fakegpu_bo_create(ctx, req.size, &req.handle, &req.alloc_size);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		/* The caller cannot learn the handle: take it back. */
		fakegpu_bo_free_handle(ctx, req.handle);
		return -EFAULT;
	}
	return 0;
}

static long fakegpu_ioctl_free(struct fakegpu_ctx *ctx, void __user *uarg)
{
	struct fakegpu_free req;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved)
		return -EINVAL;
	return fakegpu_bo_free_handle(ctx, req.handle);
}

static long fakegpu_ioctl_map(struct fakegpu_ctx *ctx, void __user *uarg)
{
	struct fakegpu_map req;
	struct fakegpu_bo *bo;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved)
		return -EINVAL;
	bo = fakegpu_bo_lookup(ctx, req.handle);
	if (!bo)
		return -ENOENT;
	req.offset = (u64)req.handle << FAKEGPU_MMAP_BUFFER_SHIFT;
	req.size = bo->size;
	fakegpu_bo_put(bo);
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

static long fakegpu_ioctl_submit(struct fakegpu_ctx *ctx, void __user *uarg)
{
	struct fakegpu_submit req;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved)
		return -EINVAL;
	ret = fakegpu_submit_job(ctx, &req.job, &req.fence);
	if (ret)
		return ret;
	/* On EFAULT here the job is queued anyway; only its fence is lost. */
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

static long fakegpu_ioctl_wait(struct fakegpu_ctx *ctx, void __user *uarg)
{
	struct fakegpu_wait req;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.pad || req.reserved)
		return -EINVAL;
	ret = fakegpu_wait_fence(ctx, req.fence, req.timeout_ns);
	if (ret)
		return ret;
	req.completed = atomic64_read(&ctx->completed);
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

static long fakegpu_ioctl_doorbell(struct fakegpu_ctx *ctx, void __user *uarg)
{
	struct fakegpu_doorbell req;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved)
		return -EINVAL;
	ret = fakegpu_doorbell(ctx, &req.count, &req.first_fence, &req.last_fence);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

/*
 * The privileged ioctl: reset the device, a change every context of every
 * user of this GPU observes (its statistics restart, reset_count moves).
 *
 * Why capable() and not ns_capable(): the GPU is a host resource, not owned by
 * any user namespace.  Any unprivileged user can create a user namespace
 * (unshare -Ur) and holds every capability inside it, so
 * ns_capable(current_user_ns(), CAP_SYS_ADMIN) would hand device-global
 * control to whoever can open the node - including root in every rootless
 * container the node is passed into.  capable() checks CAP_SYS_ADMIN in the
 * initial user namespace, which only the host's administrator has; this is
 * what real drivers do (NVIDIA's NV_IS_SUSER, DRM's drm_master_check_perm and
 * DRM_ROOT_ONLY ioctls).  It is checked at ioctl time against the caller,
 * not at open time, so passing an fd opened by root does not pass the right.
 */
static long fakegpu_ioctl_reset(struct fakegpu_ctx *ctx, void __user *uarg)
{
	struct fakegpu_device *fdev = ctx->fdev;
	struct fakegpu_reset req;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || !all_zero(req.reserved, ARRAY_SIZE(req.reserved)))
		return -EINVAL;

	atomic64_set(&fdev->jobs_completed, 0);
	fakegpu_device_reset(fdev);
	req.reset_count = atomic_inc_return(&fdev->reset_count);
	pr_info_ratelimited("fakegpu%u: reset by pid %d (reset %u)\n", fdev->index,
			    task_pid_nr(current), req.reset_count);
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

/*
 * Does @cmd create, change or submit anything?  Then it needs a file open for
 * writing.  A node passed into a container read-only (--device ...:r: a
 * device cgroup that allows only "r") can only be opened O_RDONLY there, and
 * the GPU must then be something to look at, not to run work on or to fill:
 * ALLOC, FREE, SUBMIT, DOORBELL and RESET are EBADF on such a file, as
 * write(2) is.  INFO, MAP (it only reports an offset) and WAIT only read
 * state and stay allowed.
 *
 * Checked before the argument is copied in, so the answer does not depend on
 * the struct, and before RESET's capable(), which is about the caller, not
 * the descriptor.  f_mode is fixed at open (fcntl(F_SETFL) cannot change the
 * access mode), so a context opened read-only never holds a buffer, a fence
 * or a ring (fakegpu_mmap_sq() refuses to create one for it).
 *
 * Unknown commands are not listed: they stay ENOTTY whatever the mode.
 */
static bool fakegpu_cmd_needs_write(unsigned int cmd)
{
	switch (cmd) {
	case FAKEGPU_IOCTL_ALLOC:
	case FAKEGPU_IOCTL_FREE:
	case FAKEGPU_IOCTL_SUBMIT:
	case FAKEGPU_IOCTL_DOORBELL:
	case FAKEGPU_IOCTL_RESET:
		return true;
	default:
		return false;
	}
}

/*
 * Does @cmd fail on a poisoned context (EIO) or a lost device (ENODEV)?
 * Every known command but INFO, which reports the fault, and RESET, which
 * recovers from it; unknown commands stay ENOTTY.
 */
static bool fakegpu_cmd_needs_health(unsigned int cmd)
{
	switch (cmd) {
	case FAKEGPU_IOCTL_ALLOC:
	case FAKEGPU_IOCTL_FREE:
	case FAKEGPU_IOCTL_MAP:
	case FAKEGPU_IOCTL_SUBMIT:
	case FAKEGPU_IOCTL_WAIT:
	case FAKEGPU_IOCTL_DOORBELL:
		return true;
	default:
		return false;
	}
}

long fakegpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct fakegpu_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;
	int health;

	if (!(file->f_mode & FMODE_WRITE) && fakegpu_cmd_needs_write(cmd))
		return -EBADF;
	if (fakegpu_cmd_needs_health(cmd)) {
		health = fakegpu_ctx_health(ctx);
		if (health)
			return health;
	}

	switch (cmd) {
	case FAKEGPU_IOCTL_INFO:
		return fakegpu_ioctl_info(ctx, uarg);
	case FAKEGPU_IOCTL_ALLOC:
		return fakegpu_ioctl_alloc(ctx, uarg);
	case FAKEGPU_IOCTL_FREE:
		return fakegpu_ioctl_free(ctx, uarg);
	case FAKEGPU_IOCTL_MAP:
		return fakegpu_ioctl_map(ctx, uarg);
	case FAKEGPU_IOCTL_SUBMIT:
		return fakegpu_ioctl_submit(ctx, uarg);
	case FAKEGPU_IOCTL_WAIT:
		return fakegpu_ioctl_wait(ctx, uarg);
	case FAKEGPU_IOCTL_DOORBELL:
		return fakegpu_ioctl_doorbell(ctx, uarg);
	case FAKEGPU_IOCTL_RESET:
		return fakegpu_ioctl_reset(ctx, uarg);
	default:
		return -ENOTTY;
	}
}

/*
 * /proc/PID/fdinfo/FD of a device node, in the spirit of DRM's fdinfo
 * (drm-usage-stats): what `mrun gpu ps` reads to tie a process's descriptor
 * to its context, readable by whoever may read the process's fdinfo.
 */
void fakegpu_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct fakegpu_ctx *ctx = file->private_data;
	u64 issued;

	spin_lock(&ctx->queue_lock);
	issued = ctx->last_fence;
	spin_unlock(&ctx->queue_lock);
	seq_printf(m, "fakegpu-device:\t%u\n", ctx->fdev->index);
	seq_printf(m, "fakegpu-ctx:\t%u\n", ctx->id);
	seq_printf(m, "fakegpu-ctx-pid:\t%d\n", ctx->pid);
	seq_printf(m, "fakegpu-memory:\t%lld\n", (long long)atomic64_read(&ctx->mem_used));
	seq_printf(m, "fakegpu-handles:\t%d\n", atomic_read(&ctx->nr_handles));
	seq_printf(m, "fakegpu-jobs-in-flight:\t%llu\n",
		   issued - (u64)atomic64_read(&ctx->completed));
	seq_printf(m, "fakegpu-xid:\t%d\n", atomic_read(&ctx->xid));
	seq_printf(m, "fakegpu-device-xid:\t%d\n", atomic_read(&ctx->fdev->lost_xid));
}

long fakegpu_ctl_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	if (cmd == FAKEGPU_IOCTL_INFO)
		return fakegpu_ioctl_info(NULL, (void __user *)arg);
	return -ENOTTY;
}
