// SPDX-License-Identifier: GPL-2.0
/*
 * fakegpu_main.c - module parameters, the char-device region, the device
 * class, and the control node.
 *
 * Like NVIDIA's major 195, fakegpu owns a whole major (allocated dynamically):
 * minors 0..ndev-1 are the GPUs /dev/fakegpu0.., minor 255 is /dev/fakegpuctl.
 * device_create() on a class makes devtmpfs (and udev, if running) create the
 * nodes; devtmpfs gives them mode 0600 root:root, and a udev rule may widen
 * that (helpers/).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/slab.h>

#include "fakegpu_internal.h"

unsigned int fakegpu_ndev = 2;
module_param_named(ndev, fakegpu_ndev, uint, 0444);
MODULE_PARM_DESC(ndev, "number of GPUs, /dev/fakegpu0..ndev-1 (1-16, default 2)");

unsigned long fakegpu_mem_quota = 64UL << 20;
module_param_named(mem_quota, fakegpu_mem_quota, ulong, 0444);
MODULE_PARM_DESC(mem_quota, "bytes of buffers one context may hold (default 64 MiB)");

unsigned int fakegpu_handle_quota = 64;
module_param_named(handle_quota, fakegpu_handle_quota, uint, 0444);
MODULE_PARM_DESC(handle_quota, "buffer handles one context may hold (default 64)");

unsigned long fakegpu_vram_size = 256UL << 20;
module_param_named(vram_size, fakegpu_vram_size, ulong, 0444);
MODULE_PARM_DESC(vram_size, "bytes of buffers all contexts of one GPU may hold (default 256 MiB)");

unsigned int fakegpu_job_timeout_ms = 2000;
module_param_named(job_timeout_ms, fakegpu_job_timeout_ms, uint, 0444);
MODULE_PARM_DESC(job_timeout_ms,
		 "a job running longer is a hang: Xid 8, its context poisoned (default 2000)");

unsigned int fakegpu_max_queued = 1024;
module_param_named(max_queued, fakegpu_max_queued, uint, 0444);
MODULE_PARM_DESC(max_queued, "jobs submitted by ioctl one context may have queued (default 1024)");

struct workqueue_struct *fakegpu_wq;

static dev_t fakegpu_devt;
static struct fakegpu_device *fakegpu_devices;
static struct class *fakegpu_class;
static struct cdev fakegpu_gpu_cdev;
static struct cdev fakegpu_ctl_cdev;

struct fakegpu_device *fakegpu_device_get(unsigned int minor)
{
	if (minor >= fakegpu_ndev)
		return NULL;
	/* The minor comes from a node user space may have created with mknod. */
	return &fakegpu_devices[array_index_nospec(minor, fakegpu_ndev)];
}

static const struct file_operations fakegpu_gpu_fops = {
	.owner = THIS_MODULE,
	.open = fakegpu_open,
	.release = fakegpu_release,
	.unlocked_ioctl = fakegpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl, /* the ABI has no pointers or longs */
	.mmap = fakegpu_mmap,
	.show_fdinfo = fakegpu_show_fdinfo,
	.llseek = no_llseek,
};

/* The control node only answers INFO; it has no context and no memory. */
static int fakegpu_ctl_open(struct inode *inode, struct file *file)
{
	return nonseekable_open(inode, file);
}

static const struct file_operations fakegpu_ctl_fops = {
	.owner = THIS_MODULE,
	.open = fakegpu_ctl_open,
	.unlocked_ioctl = fakegpu_ctl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

static int fakegpu_check_params(void)
{
	if (fakegpu_ndev < 1 || fakegpu_ndev > FAKEGPU_MAX_DEVICES) {
		pr_err("ndev=%u: must be 1..%u\n", fakegpu_ndev, FAKEGPU_MAX_DEVICES);
		return -EINVAL;
	}
	if (fakegpu_mem_quota < PAGE_SIZE || fakegpu_vram_size < PAGE_SIZE) {
		pr_err("mem_quota and vram_size must be at least one page\n");
		return -EINVAL;
	}
	if (fakegpu_handle_quota < 1 || fakegpu_handle_quota > FAKEGPU_HANDLE_MAX) {
		pr_err("handle_quota=%u: must be 1..%u\n", fakegpu_handle_quota, FAKEGPU_HANDLE_MAX);
		return -EINVAL;
	}
	if (fakegpu_job_timeout_ms < 1 || fakegpu_job_timeout_ms > 600000) {
		pr_err("job_timeout_ms=%u: must be 1..600000\n", fakegpu_job_timeout_ms);
		return -EINVAL;
	}
	if (fakegpu_max_queued < 1) {
		pr_err("max_queued must be at least 1\n");
		return -EINVAL;
	}
	return 0;
}

static void fakegpu_destroy_nodes(unsigned int created)
{
	unsigned int i;

	device_destroy(fakegpu_class, MKDEV(MAJOR(fakegpu_devt), FAKEGPU_CTL_MINOR));
	for (i = 0; i < created; i++)
		device_destroy(fakegpu_class, MKDEV(MAJOR(fakegpu_devt), i));
}

static int fakegpu_create_nodes(void)
{
	struct device *dev;
	unsigned int i;

	for (i = 0; i < fakegpu_ndev; i++) {
		dev = device_create(fakegpu_class, NULL, MKDEV(MAJOR(fakegpu_devt), i),
				    NULL, "fakegpu%u", i);
		if (IS_ERR(dev)) {
			fakegpu_destroy_nodes(i);
			return PTR_ERR(dev);
		}
	}
	dev = device_create(fakegpu_class, NULL, MKDEV(MAJOR(fakegpu_devt), FAKEGPU_CTL_MINOR),
			    NULL, "fakegpuctl");
	if (IS_ERR(dev)) {
		/* device_destroy() of a devt never created is a no-op. */
		fakegpu_destroy_nodes(fakegpu_ndev);
		return PTR_ERR(dev);
	}
	return 0;
}

static int __init fakegpu_init(void)
{
	unsigned int i;
	int ret;

	ret = fakegpu_check_params();
	if (ret)
		return ret;

	fakegpu_devices = kcalloc(fakegpu_ndev, sizeof(*fakegpu_devices), GFP_KERNEL);
	if (!fakegpu_devices)
		return -ENOMEM;
	for (i = 0; i < fakegpu_ndev; i++) {
		fakegpu_devices[i].index = i;
		mutex_init(&fakegpu_devices[i].ctx_lock);
		INIT_LIST_HEAD(&fakegpu_devices[i].ctxs);
	}

	ret = fakegpu_engine_init_cache();
	if (ret)
		goto err_devices;

	/* Unbound: the engine runs beside the submitter, like a GPU would. */
	fakegpu_wq = alloc_workqueue("fakegpu", WQ_UNBOUND, 0);
	if (!fakegpu_wq) {
		ret = -ENOMEM;
		goto err_cache;
	}

	ret = alloc_chrdev_region(&fakegpu_devt, 0, FAKEGPU_CTL_MINOR + 1, "fakegpu");
	if (ret)
		goto err_wq;

	cdev_init(&fakegpu_gpu_cdev, &fakegpu_gpu_fops);
	fakegpu_gpu_cdev.owner = THIS_MODULE;
	ret = cdev_add(&fakegpu_gpu_cdev, MKDEV(MAJOR(fakegpu_devt), 0), fakegpu_ndev);
	if (ret)
		goto err_region;

	cdev_init(&fakegpu_ctl_cdev, &fakegpu_ctl_fops);
	fakegpu_ctl_cdev.owner = THIS_MODULE;
	ret = cdev_add(&fakegpu_ctl_cdev, MKDEV(MAJOR(fakegpu_devt), FAKEGPU_CTL_MINOR), 1);
	if (ret)
		goto err_gpu_cdev;

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	fakegpu_class = class_create("fakegpu");
#else
	fakegpu_class = class_create(THIS_MODULE, "fakegpu");
#endif
	if (IS_ERR(fakegpu_class)) {
		ret = PTR_ERR(fakegpu_class);
		goto err_ctl_cdev;
	}

	/* Nodes last: once they appear, everything behind them works. */
	ret = fakegpu_create_nodes();
	if (ret)
		goto err_class;
	fakegpu_debugfs_init();

	pr_info("%u devices, major %d, abi %d, driver %u.%u.%u\n", fakegpu_ndev,
		MAJOR(fakegpu_devt), FAKEGPU_ABI_VERSION,
		FAKEGPU_VERSION_MAJOR(FAKEGPU_DRIVER_VERSION),
		FAKEGPU_VERSION_MINOR(FAKEGPU_DRIVER_VERSION),
		FAKEGPU_VERSION_PATCH(FAKEGPU_DRIVER_VERSION));
	return 0;

err_class:
	class_destroy(fakegpu_class);
err_ctl_cdev:
	cdev_del(&fakegpu_ctl_cdev);
err_gpu_cdev:
	cdev_del(&fakegpu_gpu_cdev);
err_region:
	unregister_chrdev_region(fakegpu_devt, FAKEGPU_CTL_MINOR + 1);
err_wq:
	destroy_workqueue(fakegpu_wq);
err_cache:
	fakegpu_engine_destroy_cache();
err_devices:
	kfree(fakegpu_devices);
	return ret;
}

/*
 * No file of ours is open here (each holds a module reference through the
 * cdev owner), so every context, buffer and work item is already gone.
 */
static void __exit fakegpu_exit(void)
{
	unsigned int i;

	fakegpu_debugfs_exit();
	fakegpu_destroy_nodes(fakegpu_ndev);
	class_destroy(fakegpu_class);
	cdev_del(&fakegpu_ctl_cdev);
	cdev_del(&fakegpu_gpu_cdev);
	unregister_chrdev_region(fakegpu_devt, FAKEGPU_CTL_MINOR + 1);
	destroy_workqueue(fakegpu_wq);
	fakegpu_engine_destroy_cache();
	for (i = 0; i < fakegpu_ndev; i++)
		mutex_destroy(&fakegpu_devices[i].ctx_lock);
	kfree(fakegpu_devices);
	pr_info("unloaded\n");
}

module_init(fakegpu_init);
module_exit(fakegpu_exit);

MODULE_LICENSE("GPL");
/* /sys/module/fakegpu/version: readable by anyone, unlike the device (the doctor). */
MODULE_VERSION(FAKEGPU_DRIVER_VERSION_STRING);
MODULE_AUTHOR("mrun developers");
MODULE_DESCRIPTION("fakegpu: a teaching GPU driver with contexts, fences and mmap'd rings");
