// SPDX-License-Identifier: GPL-2.0
/*
 * fakegpu_mmap.c - what a context can map, chosen by the mmap offset:
 *
 *   FAKEGPU_MMAP_FENCE_OFFSET  the fence page, read-only
 *   FAKEGPU_MMAP_SQ_OFFSET     the submission ring, read-write, created here;
 *                              only on a file open for writing
 *   handle << 32               a buffer (offset given by FAKEGPU_IOCTL_MAP)
 *
 * Every mapping must be MAP_SHARED (a private copy of device memory would
 * silently stop tracking it) and no longer than the object.  The fence page
 * and the ring live as long as the context, which outlives every vma (each
 * vma holds the file), so they need no reference counting; buffers do.
 *
 * A file open read-only (no FMODE_WRITE): do_mmap() itself refuses
 * MAP_SHARED with PROT_WRITE (EACCES), and for a read-only MAP_SHARED it
 * clears VM_SHARED and VM_MAYWRITE, keeping only VM_MAYSHARE - so "is it
 * shared?" is VM_MAYSHARE here, and mprotect(PROT_WRITE) of such a vma is
 * EACCES as well.  Such a file may map the fence page; it has no buffers (it
 * cannot ALLOC); and it may not map the ring at all, not even read-only: the
 * first mapping creates the ring, whose only use is submitting.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "fakegpu_internal.h"

static int fakegpu_mmap_fence(struct fakegpu_ctx *ctx, struct vm_area_struct *vma)
{
	if (vma->vm_end - vma->vm_start > PAGE_SIZE)
		return -EINVAL;
	/* The driver is the only writer; mprotect(PROT_WRITE) must fail too. */
	if (vma->vm_flags & VM_WRITE)
		return -EACCES;
	fakegpu_vma_clear_flags(vma, VM_MAYWRITE);
	return remap_vmalloc_range(vma, ctx->fence_page, 0);
}

static int fakegpu_mmap_sq(struct file *file, struct fakegpu_ctx *ctx,
			   struct vm_area_struct *vma)
{
	struct fakegpu_sq_ctrl *sq;

	/* Creating the ring is setting up submission: a writer's business. */
	if (!(file->f_mode & FMODE_WRITE))
		return -EACCES;
	if (vma->vm_end - vma->vm_start > ctx->sq_size)
		return -EINVAL;

	/* Lock order: mmap_lock (held by our caller), then sq_lock. */
	mutex_lock(&ctx->sq_lock);
	sq = ctx->sq;
	if (!sq) {
		sq = vmalloc_user(ctx->sq_size);
		if (!sq) {
			mutex_unlock(&ctx->sq_lock);
			return -ENOMEM;
		}
		/* Pairs with the doorbell's smp_load_acquire(&ctx->sq). */
		smp_store_release(&ctx->sq, sq);
	}
	mutex_unlock(&ctx->sq_lock);
	return remap_vmalloc_range(vma, sq, 0);
}

int fakegpu_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct fakegpu_ctx *ctx = file->private_data;
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	int ret;

	/* VM_MAYSHARE, not VM_SHARED: see the top of this file. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;

	/* The fence page reports a fault; nothing new on a dead context. */
	if (offset == FAKEGPU_MMAP_FENCE_OFFSET)
		return fakegpu_mmap_fence(ctx, vma);
	ret = fakegpu_ctx_health(ctx);
	if (ret)
		return ret;
	if (offset == FAKEGPU_MMAP_SQ_OFFSET)
		return fakegpu_mmap_sq(file, ctx, vma);
	/* A buffer is mapped whole from its start: the low 32 bits are zero. */
	if ((offset & GENMASK_ULL(FAKEGPU_MMAP_BUFFER_SHIFT - 1, 0)) == 0 &&
	    (offset >> FAKEGPU_MMAP_BUFFER_SHIFT) <= FAKEGPU_HANDLE_MAX)
		return fakegpu_bo_mmap(ctx, offset >> FAKEGPU_MMAP_BUFFER_SHIFT, vma);
	return -EINVAL;
}
