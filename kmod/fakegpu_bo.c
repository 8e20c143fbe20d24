// SPDX-License-Identifier: GPL-2.0
/*
 * fakegpu_bo.c - buffer objects: the "device memory" of a context.
 *
 * A buffer is zeroed vmalloc_user() memory, so it can be handed to user space
 * with remap_vmalloc_range().  It is charged twice when created - to the
 * context (mem_quota, handle_quota: EDQUOT) and to the device (vram_size:
 * ENOMEM) - and uncharged when its last reference goes, which may be after
 * FREE if a job or a mapping still uses it.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "fakegpu_internal.h"

static int fakegpu_charge(struct fakegpu_ctx *ctx, size_t size)
{
	struct fakegpu_device *fdev = ctx->fdev;

	if (atomic64_add_return(size, &ctx->mem_used) > fakegpu_mem_quota) {
		atomic64_sub(size, &ctx->mem_used);
		return -EDQUOT;
	}
	if (atomic64_add_return(size, &fdev->vram_used) > fakegpu_vram_size) {
		atomic64_sub(size, &fdev->vram_used);
		atomic64_sub(size, &ctx->mem_used);
		return -ENOMEM;
	}
	return 0;
}

static void fakegpu_uncharge(struct fakegpu_ctx *ctx, size_t size)
{
	atomic64_sub(size, &ctx->fdev->vram_used);
	atomic64_sub(size, &ctx->mem_used);
}

/* The last reference is gone.  Process context: vfree() may sleep. */
static void fakegpu_bo_release(struct kref *ref)
{
	struct fakegpu_bo *bo = container_of(ref, struct fakegpu_bo, ref);

	vfree(bo->vaddr);
	fakegpu_uncharge(bo->ctx, bo->size);
	kfree(bo);
}

void fakegpu_bo_put(struct fakegpu_bo *bo)
{
	might_sleep();
	kref_put(&bo->ref, fakegpu_bo_release);
}

/* Returns the buffer with a new reference, or NULL if the handle is not ours. */
struct fakegpu_bo *fakegpu_bo_lookup(struct fakegpu_ctx *ctx, u32 handle)
{
	struct fakegpu_bo *bo;

	/*
	 * The handle's reference keeps bo alive while it is in the xarray, and
	 * erase takes xa_lock, so a plain kref_get under xa_lock is safe.
	 */
	xa_lock(&ctx->buffers);
	bo = xa_load(&ctx->buffers, handle);
	if (bo)
		kref_get(&bo->ref);
	xa_unlock(&ctx->buffers);
	return bo;
}

int fakegpu_bo_create(struct fakegpu_ctx *ctx, u64 size, u32 *handle, u64 *alloc_size)
{
	struct fakegpu_bo *bo;
	size_t aligned;
	int ret;

	if (size == 0 || size > FAKEGPU_MAX_BUFFER_SIZE)
		return -EINVAL;
	aligned = PAGE_ALIGN(size);

	if (atomic_inc_return(&ctx->nr_handles) > fakegpu_handle_quota) {
		ret = -EDQUOT;
		goto err_handle;
	}
	ret = fakegpu_charge(ctx, aligned);
	if (ret)
		goto err_handle;

	ret = -ENOMEM;
	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		goto err_charge;
	bo->vaddr = vmalloc_user(aligned);
	if (!bo->vaddr)
		goto err_bo;
	bo->size = aligned;
	bo->ctx = ctx;
	kref_init(&bo->ref); /* the handle's reference */

	ret = xa_alloc_cyclic(&ctx->buffers, handle, bo, XA_LIMIT(1, FAKEGPU_HANDLE_MAX),
			      &ctx->next_handle, GFP_KERNEL);
	if (ret < 0) {
		/* -EBUSY would mean "no free id": with the quota below the id space, never. */
		ret = ret == -EBUSY ? -EDQUOT : ret;
		goto err_vmem;
	}
	*alloc_size = aligned;
	return 0;

err_vmem:
	vfree(bo->vaddr);
err_bo:
	kfree(bo);
err_charge:
	fakegpu_uncharge(ctx, aligned);
err_handle:
	atomic_dec(&ctx->nr_handles);
	return ret;
}

int fakegpu_bo_free_handle(struct fakegpu_ctx *ctx, u32 handle)
{
	struct fakegpu_bo *bo = xa_erase(&ctx->buffers, handle);

	if (!bo)
		return -ENOENT; /* never allocated, already freed, or another context's */
	atomic_dec(&ctx->nr_handles);
	fakegpu_bo_put(bo);
	return 0;
}

/* release(): no ioctl can run any more, so nothing races with the walk. */
void fakegpu_bo_drop_all_handles(struct fakegpu_ctx *ctx)
{
	struct fakegpu_bo *bo;
	unsigned long handle;

	xa_for_each(&ctx->buffers, handle, bo) {
		xa_erase(&ctx->buffers, handle);
		atomic_dec(&ctx->nr_handles);
		fakegpu_bo_put(bo);
	}
}

/* A vma holds a reference; fork and split duplicate it, munmap drops it. */
static void fakegpu_bo_vm_open(struct vm_area_struct *vma)
{
	struct fakegpu_bo *bo = vma->vm_private_data;

	kref_get(&bo->ref);
}

static void fakegpu_bo_vm_close(struct vm_area_struct *vma)
{
	fakegpu_bo_put(vma->vm_private_data);
}

static const struct vm_operations_struct fakegpu_bo_vm_ops = {
	.open = fakegpu_bo_vm_open,
	.close = fakegpu_bo_vm_close,
};

int fakegpu_bo_mmap(struct fakegpu_ctx *ctx, u32 handle, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	struct fakegpu_bo *bo;
	int ret;

	bo = fakegpu_bo_lookup(ctx, handle);
	if (!bo)
		return -EINVAL; /* mmap(2)'s errno for an offset that names nothing */
	if (len > bo->size) {
		ret = -EINVAL;
		goto err_put;
	}
	/* Inserts the pages now; sets VM_DONTEXPAND so mremap cannot grow it. */
	ret = remap_vmalloc_range(vma, bo->vaddr, 0);
	if (ret)
		goto err_put;
	vma->vm_private_data = bo; /* the lookup's reference now belongs to the vma */
	vma->vm_ops = &fakegpu_bo_vm_ops;
	return 0;

err_put:
	fakegpu_bo_put(bo);
	return ret;
}
