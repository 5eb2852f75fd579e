// SPDX-License-Identifier: GPL-2.0
/*
 * fixes_repro SOURCE KIB: allocates a dma-buf of KIB KiB from SOURCE and has
 * the fixes_repro module map it once for its PCI function (64 KiB segments);
 * prints what that mapping held, "ENTRIES LONGEST" (bytes).
 *   udmabuf  a udmabuf over a memfd on 2 MiB huge pages (one contiguous
 *            folio per 2 MiB, so an unfixed udmabuf gives 2 MiB entries)
 *   heap     the system dma-heap (/dev/dma_heap/system: 1 MiB pages first)
 * For make check-fixes (scripts/guest/fixes.sh).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/dma-heap.h>
#include <linux/memfd.h>
#include <linux/udmabuf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define IMPORT "/sys/kernel/debug/fixes_repro/import"

static int fail(const char *what)
{
	fprintf(stderr, "fixes_repro: %s: %s\n", what, strerror(errno));
	return 1;
}

static int udmabuf_alloc(size_t bytes)
{
	struct udmabuf_create create = { .flags = UDMABUF_FLAGS_CLOEXEC };
	int memfd, dev, fd;

	memfd = memfd_create("fixes_repro", MFD_ALLOW_SEALING | MFD_HUGETLB | MFD_HUGE_2MB);
	if (memfd < 0)
		return -1;
	if (ftruncate(memfd, bytes) || fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
		return -1;
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -1;
	create.memfd = memfd;
	create.size = bytes;
	fd = ioctl(dev, UDMABUF_CREATE, &create);
	close(dev);
	close(memfd);
	return fd;
}

static int heap_alloc(size_t bytes)
{
	struct dma_heap_allocation_data alloc = {
		.len = bytes,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};
	int dev;

	dev = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	if (dev < 0)
		return -1;
	if (ioctl(dev, DMA_HEAP_IOCTL_ALLOC, &alloc) < 0) {
		close(dev);
		return -1;
	}
	close(dev);
	return alloc.fd;
}

int main(int argc, char **argv)
{
	char text[64];
	size_t bytes;
	ssize_t n;
	int buf, imp;

	if (argc != 3 || (strcmp(argv[1], "udmabuf") && strcmp(argv[1], "heap"))) {
		fprintf(stderr, "usage: %s udmabuf|heap KIB\n", argv[0]);
		return 2;
	}
	bytes = strtoull(argv[2], NULL, 0) << 10;
	buf = !strcmp(argv[1], "heap") ? heap_alloc(bytes) : udmabuf_alloc(bytes);
	if (buf < 0)
		return fail(argv[1]);
	imp = open(IMPORT, O_RDWR | O_CLOEXEC);
	if (imp < 0)
		return fail(IMPORT);
	n = snprintf(text, sizeof(text), "%d", buf);
	if (write(imp, text, n) != n)
		return fail("import");
	n = pread(imp, text, sizeof(text) - 1, 0);
	if (n <= 0)
		return fail("reading the import's result");
	text[n] = '\0';
	fputs(text, stdout);
	close(imp);
	close(buf);
	return 0;
}
