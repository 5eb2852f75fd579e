// SPDX-License-Identifier: GPL-2.0
/*
 * A short, readable walk through /dev/dmabuf_exporter_rs for `make demo`:
 * create a movable buffer, write through a CPU mapping, migrate it while
 * mapped, read the bytes back, show the counters. Exits non-zero on any
 * failed step.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dmabuf_exporter_rs.h"

#define PAGE 4096UL

static int fail(const char *what)
{
	printf("  FAILED: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(void)
{
	static const __u32 chunks[] = { 1, 4, 1, 8, 2 };
	static const char msg[] = "hello from a dma-buf that moves";
	struct dmabuf_exp_create c = {
		.version = DMABUF_EXP_VERSION,
		.flags = DMABUF_EXP_F_DYNAMIC,
		.size = 16 * PAGE,
		.chunks = (unsigned long)chunks,
		.nchunks = 5,
	};
	struct dmabuf_exp_migrate m = { .version = DMABUF_EXP_VERSION, .delay_ms = 100 };
	struct dmabuf_exp_stats s = { .version = DMABUF_EXP_VERSION };
	char *p;
	int dev, i;

	dev = open("/dev/dmabuf_exporter_rs", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return fail("open /dev/dmabuf_exporter_rs");
	if (ioctl(dev, DMABUF_EXP_IOC_CREATE, &c))
		return fail("CREATE");
	printf("  created a 64 KiB movable dma-buf (fd %d), table entries of 1, 4, 1, 8, 2 pages\n",
	       c.fd);
	p = mmap(NULL, c.size, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	if (p == MAP_FAILED)
		return fail("mmap");
	memcpy(p + 5 * PAGE + 100, msg, sizeof(msg));
	printf("  wrote \"%s\" at offset %lu through mmap\n", msg, 5 * PAGE + 100);
	m.fd = c.fd;
	for (i = 1; i <= 3; i++) {
		if (ioctl(dev, DMABUF_EXP_IOC_MIGRATE, &m))
			return fail("MIGRATE");
		printf("  migration %d: new pages, copy fence after %u ms; read back: \"%s\"\n",
		       i, m.delay_ms, p + 5 * PAGE + 100);
		if (strcmp(p + 5 * PAGE + 100, msg)) {
			printf("  FAILED: the bytes did not survive the migration\n");
			return 1;
		}
	}
	s.fd = c.fd;
	if (ioctl(dev, DMABUF_EXP_IOC_STATS, &s))
		return fail("STATS");
	printf("  counters: %llu migrations, %llu attachments, %llu mappings\n",
	       (unsigned long long)s.migrations, (unsigned long long)s.attachments,
	       (unsigned long long)s.mappings);
	munmap(p, c.size);
	close(c.fd);
	close(dev);
	return s.migrations == 3 ? 0 : 1;
}
