/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dma-bufs of the kernel's own exporters, for the guest programs: the
 * system dma-heap (/dev/dma_heap/system) and vgem, a DRM driver whose GEM
 * objects are exported with PRIME and which can put unsignalled fences into
 * an object's reservation object, as a GPU's implicit synchronisation does.
 *
 * vgem's ioctls are declared here (the host's headers have no drm/): the
 * numbers and layouts are the kernel's ABI (include/uapi/drm/drm.h,
 * drm_mode.h and vgem_drm.h).
 */
#ifndef EXPORTERS_USER_H
#define EXPORTERS_USER_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/types.h>

/*
 * Names of the exporters in /sys/kernel/debug/dma_buf/bufinfo, with the
 * column's tabs (see dmabufs_of()): the heap's name, and DRM's PRIME helper
 * (which names every GEM export after the drm module).
 */
#define HEAP_EXP_NAME "\tsystem\t"
#define VGEM_EXP_NAME "\tdrm\t"

/* A buffer of @size bytes from the system heap; -1 with *err set if not. */
static inline int heap_alloc(size_t size, int *err)
{
	struct dma_heap_allocation_data a = {
		.len = size,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	*err = 0;
	if (heap < 0) {
		*err = errno;
		return -1;
	}
	if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a)) {
		*err = errno;
		close(heap);
		return -1;
	}
	close(heap);
	return a.fd;
}

struct vgem_create_dumb {	/* struct drm_mode_create_dumb */
	__u32 height, width, bpp, flags;
	__u32 handle, pitch;
	__u64 size;
};

struct vgem_prime_handle {	/* struct drm_prime_handle */
	__u32 handle, flags;
	__s32 fd;
};

struct vgem_gem_close {		/* struct drm_gem_close */
	__u32 handle, pad;
};

struct vgem_fence_attach {	/* struct drm_vgem_fence_attach */
	__u32 handle, flags, out_fence, pad;
};

struct vgem_fence_signal {	/* struct drm_vgem_fence_signal */
	__u32 fence, flags;
};

#define VGEM_IOCTL_BASE 'd'
#define VGEM_IOCTL_GEM_CLOSE _IOW(VGEM_IOCTL_BASE, 0x09, struct vgem_gem_close)
#define VGEM_IOCTL_PRIME_HANDLE_TO_FD _IOWR(VGEM_IOCTL_BASE, 0x2d, struct vgem_prime_handle)
#define VGEM_IOCTL_MODE_CREATE_DUMB _IOWR(VGEM_IOCTL_BASE, 0xB2, struct vgem_create_dumb)
/* DRM_COMMAND_BASE (0x40) + DRM_VGEM_FENCE_ATTACH (1) and _SIGNAL (2). */
#define VGEM_IOCTL_FENCE_ATTACH _IOWR(VGEM_IOCTL_BASE, 0x41, struct vgem_fence_attach)
#define VGEM_IOCTL_FENCE_SIGNAL _IOW(VGEM_IOCTL_BASE, 0x42, struct vgem_fence_signal)
#define VGEM_FENCE_WRITE 0x1
/* DRM_CLOEXEC and DRM_RDWR, the flags of a PRIME export. */
#define VGEM_PRIME_FLAGS (O_CLOEXEC | O_RDWR)

/* vgem's device node: the DRM device whose parent is vgem's (faux) device. */
static inline int vgem_open(void)
{
	char path[32], dev[128], link[64];
	const char *base;
	int i, fd;
	ssize_t n;

	for (i = 0; i < 16; i++) {
		snprintf(link, sizeof(link), "/sys/class/drm/card%d/device", i);
		n = readlink(link, dev, sizeof(dev) - 1);
		if (n < 0)
			continue;
		dev[n] = '\0';
		base = strrchr(dev, '/');
		if (strcmp(base ? base + 1 : dev, "vgem"))
			continue;
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

/*
 * A GEM object of @size bytes (a multiple of the page size) on vgem @vgem,
 * exported as a dma-buf: its descriptor, and its GEM handle in *handle; -1
 * with *err set if not.
 */
static inline int vgem_alloc(int vgem, size_t size, __u32 *handle, int *err)
{
	struct vgem_create_dumb c = { .height = 1, .width = size / 4, .bpp = 32 };
	struct vgem_prime_handle p = { .flags = VGEM_PRIME_FLAGS, .fd = -1 };

	*err = 0;
	if (ioctl(vgem, VGEM_IOCTL_MODE_CREATE_DUMB, &c)) {
		*err = errno;
		return -1;
	}
	p.handle = c.handle;
	if (ioctl(vgem, VGEM_IOCTL_PRIME_HANDLE_TO_FD, &p)) {
		struct vgem_gem_close g = { .handle = c.handle };

		*err = errno;
		ioctl(vgem, VGEM_IOCTL_GEM_CLOSE, &g);
		return -1;
	}
	*handle = c.handle;
	return p.fd;
}

/* Drops the GEM handle (the dma-buf keeps the object). */
static inline int vgem_close_handle(int vgem, __u32 handle)
{
	struct vgem_gem_close g = { .handle = handle };

	return ioctl(vgem, VGEM_IOCTL_GEM_CLOSE, &g) ? errno : 0;
}

/*
 * Puts an unsignalled fence into the reservation object of GEM object
 * @handle, for writing (DMA_RESV_USAGE_WRITE) or reading (_READ); vgem
 * signals it itself 10 s later if nobody does. Its id, or 0 with *err set.
 */
static inline __u32 vgem_fence(int vgem, __u32 handle, int write, int *err)
{
	struct vgem_fence_attach a = { .handle = handle,
				       .flags = write ? VGEM_FENCE_WRITE : 0 };

	*err = ioctl(vgem, VGEM_IOCTL_FENCE_ATTACH, &a) ? errno : 0;
	return *err ? 0 : a.out_fence;
}

/* Signals fence @id: 0, or ETIMEDOUT if vgem's timeout signalled it first. */
static inline int vgem_signal(int vgem, __u32 id)
{
	struct vgem_fence_signal s = { .fence = id };

	return ioctl(vgem, VGEM_IOCTL_FENCE_SIGNAL, &s) ? errno : 0;
}

/* DMA_BUF_IOCTL_SYNC around CPU access through a dma-buf's mmap. */
static inline int dmabuf_sync(int fd, __u64 flags)
{
	struct dma_buf_sync s = { .flags = flags };

	return ioctl(fd, DMA_BUF_IOCTL_SYNC, &s) ? errno : 0;
}

#endif /* EXPORTERS_USER_H */
