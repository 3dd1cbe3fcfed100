// SPDX-License-Identifier: GPL-2.0
/*
 * vmafx_fence_test: sync_files whose fences a test signals, with an error or
 * without. vmafx's dma-buf VM runs Debian's kernel, which has no SW_SYNC and
 * whose vgem fences never fail; this is how its tests get a failed fence.
 *
 * /dev/vmafx_fence_test, per open file:
 *   VMAFX_FENCE_CREATE: a new pending fence, returned as a sync_file fd
 *                       (O_CLOEXEC) and a handle for SIGNAL
 *   VMAFX_FENCE_SIGNAL: error != 0 (a negative errno) sets the fence's
 *                       error first; then it signals; the handle is spent
 * Fences still pending at close signal with -ENOENT (as sw_sync's do).
 */
#include <linux/dma-fence.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sync_file.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

struct vmafx_fence_create {
	__s32 fd;	/* out */
	__u32 handle;	/* out */
};

struct vmafx_fence_signal {
	__u32 handle;
	__s32 error;	/* 0, or -errno */
};

#define VMAFX_FENCE_CREATE _IOR('v', 0xf0, struct vmafx_fence_create)
#define VMAFX_FENCE_SIGNAL _IOW('v', 0xf1, struct vmafx_fence_signal)

struct test_fence {
	struct dma_fence base;
	/* Per fence, not per file: a sync_file may outlive the device file. */
	spinlock_t lock;
};

static const char *test_fence_name(struct dma_fence *f)
{
	return "vmafx_fence_test";
}

static void test_fence_release(struct dma_fence *f)
{
	kfree_rcu(container_of(f, struct test_fence, base), base.rcu);
}

static const struct dma_fence_ops test_fence_ops = {
	.get_driver_name = test_fence_name,
	.get_timeline_name = test_fence_name,
	.release = test_fence_release,
};

/* The pending fences of one open file, by handle (each holds a reference). */
static int test_open(struct inode *inode, struct file *file)
{
	struct xarray *fences = kzalloc(sizeof(*fences), GFP_KERNEL);

	if (!fences)
		return -ENOMEM;
	xa_init_flags(fences, XA_FLAGS_ALLOC1);
	file->private_data = fences;
	return 0;
}

static void signal_and_put(struct dma_fence *f, int error)
{
	if (error)
		dma_fence_set_error(f, error);
	dma_fence_signal(f);
	dma_fence_put(f);
}

static int test_release(struct inode *inode, struct file *file)
{
	struct xarray *fences = file->private_data;
	struct dma_fence *f;
	unsigned long handle;

	xa_for_each(fences, handle, f) {
		xa_erase(fences, handle);
		signal_and_put(f, -ENOENT);
	}
	xa_destroy(fences);
	kfree(fences);
	return 0;
}

static long test_create(struct xarray *fences, void __user *arg)
{
	struct vmafx_fence_create out;
	struct sync_file *sync_file;
	struct test_fence *tf;
	int fd, ret;

	tf = kzalloc(sizeof(*tf), GFP_KERNEL);
	if (!tf)
		return -ENOMEM;
	spin_lock_init(&tf->lock);
	/* Its own context: fences of one context must signal in order. */
	dma_fence_init(&tf->base, &test_fence_ops, &tf->lock, dma_fence_context_alloc(1), 1);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto put_fence;
	}
	sync_file = sync_file_create(&tf->base);	/* takes its own reference */
	if (!sync_file) {
		ret = -ENOMEM;
		goto put_fd;
	}
	ret = xa_alloc(fences, &out.handle, &tf->base, xa_limit_32b, GFP_KERNEL);
	if (ret)
		goto put_file;
	out.fd = fd;
	if (copy_to_user(arg, &out, sizeof(out))) {
		xa_erase(fences, out.handle);
		ret = -EFAULT;
		goto put_file;
	}
	fd_install(fd, sync_file->file);
	return 0;

put_file:
	fput(sync_file->file);
put_fd:
	put_unused_fd(fd);
put_fence:
	signal_and_put(&tf->base, -ECANCELED);
	return ret;
}

static long test_signal(struct xarray *fences, void __user *arg)
{
	struct vmafx_fence_signal in;
	struct dma_fence *f;

	if (copy_from_user(&in, arg, sizeof(in)))
		return -EFAULT;
	if (in.error > 0 || in.error < -MAX_ERRNO)
		return -EINVAL;
	f = xa_erase(fences, in.handle);
	if (!f)
		return -ENOENT;
	signal_and_put(f, in.error);
	return 0;
}

static long test_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case VMAFX_FENCE_CREATE:
		return test_create(file->private_data, (void __user *)arg);
	case VMAFX_FENCE_SIGNAL:
		return test_signal(file->private_data, (void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations test_fops = {
	.owner = THIS_MODULE,
	.open = test_open,
	.release = test_release,
	.unlocked_ioctl = test_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice test_device = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "vmafx_fence_test",
	.fops = &test_fops,
	.mode = 0666,
};

module_misc_device(test_device);

MODULE_DESCRIPTION("vmafx tests: sync_files whose fences signal with a chosen error");
MODULE_LICENSE("GPL");
