// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace test of /dev/dmabuf_exporter_rs, run in the guest; prints KTAP.
 *
 * Creates buffers with several layouts, maps them, fills them, migrates them
 * and checks every byte after each move; reads and writes them through
 * DMABUF_EXP_IOC_RW; checks that every bad argument gets its errno, and
 * that each buffer holds the exporter's module; checks that nothing is left
 * behind (no buffer of this exporter in /sys/kernel/debug/dma_buf/bufinfo
 * once everything is closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/dma-buf.h>

#include "dmabuf_exporter_rs.h"
#include "exp_user.h"
#include "bufinfo_user.h"
#include "ktap_user.h"

#define PAGE 4096UL

static int create(int dev, __u32 flags, __u64 size, const __u32 *chunks,
		  __u32 n, int *err)
{
	struct dmabuf_exp_create c = {
		.version = DMABUF_EXP_VERSION,
		.flags = flags,
		.size = size,
		.chunks = (uintptr_t)chunks,
		.nchunks = n,
		.fd = -1,
	};

	*err = 0;
	if (ioctl(dev, DMABUF_EXP_IOC_CREATE, &c)) {
		*err = errno;
		return -1;
	}
	return c.fd;
}

static int migrate(int dev, int fd, __u32 delay)
{
	struct dmabuf_exp_migrate m = {
		.version = DMABUF_EXP_VERSION, .fd = fd, .delay_ms = delay,
	};

	return ioctl(dev, DMABUF_EXP_IOC_MIGRATE, &m) ? errno : 0;
}

static int inject(int dev, __u32 version, int fd, __u32 pin_errno, __u32 map_errno)
{
	struct dmabuf_exp_inject i = {
		.version = version, .fd = fd, .pin_errno = pin_errno, .map_errno = map_errno,
	};

	return ioctl(dev, DMABUF_EXP_IOC_INJECT, &i) ? errno : 0;
}

static int stats(int dev, int fd, struct dmabuf_exp_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->version = DMABUF_EXP_VERSION;
	s->fd = fd;
	return ioctl(dev, DMABUF_EXP_IOC_STATS, s) ? errno : 0;
}

static unsigned char pat(size_t i, unsigned int seed)
{
	return (unsigned char)(i * 131 + seed * 7 + (i >> 12));
}

static int check_bytes(const unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat(i, seed))
			return 0;
	return 1;
}

/* Fill, migrate `rounds` times checking every byte, refill, migrate again. */
static void layout_case(int dev, const char *name, __u64 size,
			const __u32 *chunks, __u32 n)
{
	struct dmabuf_exp_stats st;
	struct dma_buf_sync sync;
	int err, fd, round, ok = 1;
	unsigned char *p, *q;
	size_t i;

	fd = create(dev, DMABUF_EXP_F_DYNAMIC, size, chunks, n, &err);
	result(fd >= 0, "create_%s", name);
	if (fd < 0)
		return;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	result(p != MAP_FAILED, "mmap_%s", name);
	if (p == MAP_FAILED) {
		close(fd);
		return;
	}
	for (i = 0; i < size; i++)
		ok &= p[i] == 0;
	result(ok, "zeroed_%s", name);
	for (i = 0; i < size; i++)
		p[i] = pat(i, 1);
	for (round = 0; round < 4; round++) {
		ok &= migrate(dev, fd, round % 2 ? 30 : 0) == 0;
		sync.flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW;
		ok &= ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync) == 0;
		ok &= check_bytes(p, size, 1);
		sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW;
		ok &= ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync) == 0;
	}
	result(ok, "contents_survive_4_migrations_%s", name);
	for (i = 0; i < size; i++)
		p[i] = pat(i, 2);
	ok = migrate(dev, fd, 50) == 0 && check_bytes(p, size, 2);
	result(ok, "writes_after_migration_survive_%s", name);
	/*
	 * A second, new mapping sees the buffer's current pages: it proves the
	 * first mapping followed the moves instead of keeping the old pages.
	 */
	q = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	result(q != MAP_FAILED && check_bytes(q, size, 2), "fresh_mapping_agrees_%s", name);
	if (q != MAP_FAILED)
		munmap(q, size);
	ok = stats(dev, fd, &st) == 0 && st.migrations == 5 &&
	     st.attachments == 0 && st.pins == 0 && st.mappings == 0;
	result(ok, "stats_%s (migrations %llu)", name, (unsigned long long)st.migrations);
	munmap(p, size);
	close(fd);
}

static void errno_case(const char *name, int got, int want)
{
	result(got == want, "errno_%s (got %d, want %d)", name, got, want);
}

/* The lowest descriptor number free in this process. */
static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

/*
 * A caller that cannot learn the new descriptor (the result cannot be
 * copied back) gets EFAULT and no descriptor: none may be left open behind
 * its back, nor the buffer it would hold.
 */
static void create_result_unwritable_case(int dev)
{
	struct dmabuf_exp_create *c;
	int before, after, got;

	c = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED) {
		result(0, "create_result_unwritable (mmap failed)");
		return;
	}
	memset(c, 0, sizeof(*c));
	c->version = DMABUF_EXP_VERSION;
	c->size = PAGE;
	c->fd = -1;
	mprotect(c, PAGE, PROT_READ);
	before = lowest_free_fd();
	got = ioctl(dev, DMABUF_EXP_IOC_CREATE, c) ? errno : 0;
	after = lowest_free_fd();
	result(got == EFAULT && before >= 0 && after == before,
	       "create_result_unwritable_efault_no_fd_left (errno %d, lowest free fd %d then %d)",
	       got, before, after);
	munmap(c, PAGE);
}

/* The exporter module's reference count, or -1. */
static long module_refcnt(void)
{
	FILE *f = fopen("/sys/module/dmabuf_exporter_rs/refcnt", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/*
 * Each buffer holds the exporter's module (the owner the dma-buf core
 * takes: the exporter type's module), until it is released.
 */
static void module_held_case(int dev)
{
	long before, held, after;
	int err, a, b;

	before = module_refcnt();
	a = create(dev, 0, PAGE, NULL, 0, &err);
	b = create(dev, DMABUF_EXP_F_DYNAMIC, PAGE, NULL, 0, &err);
	held = module_refcnt();
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	after = module_refcnt();
	result(before >= 0 && a >= 0 && b >= 0 && held == before + 2 && after == before,
	       "buffers_hold_the_module (refcnt %ld, %ld with two buffers, %ld after)",
	       before, held, after);
}

static int rw(int dev, int fd, __u64 offset, void *data, __u64 len, __u32 flags)
{
	struct dmabuf_exp_rw r = {
		.version = DMABUF_EXP_VERSION, .fd = fd, .offset = offset, .len = len,
		.data = (uintptr_t)data, .flags = flags,
	};

	return ioctl(dev, DMABUF_EXP_IOC_RW, &r) ? errno : 0;
}

/*
 * DMABUF_EXP_IOC_RW against the CPU mapping of the same buffer (two chunks,
 * a range across them and longer than the kernel's step), then its errnos;
 * a buffer in system memory has no device-memory offset.
 */
static void rw_case(int dev)
{
	static const __u32 two[] = { 16, 16 };
	const size_t size = 32 * PAGE, off = 3 * PAGE + 5, len = 26 * PAGE;
	unsigned char *buf = malloc(size), *map;
	struct dmabuf_exp_stats st;
	int err, fd, ok;
	size_t i;

	fd = create(dev, DMABUF_EXP_F_DYNAMIC, size, two, 2, &err);
	map = fd < 0 ? MAP_FAILED : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!buf || map == MAP_FAILED) {
		result(0, "rw_buffer_and_mapping (errno %d)", fd < 0 ? err : errno);
		goto out;
	}
	for (i = 0; i < len; i++)
		buf[i] = pat(i, 9);
	ok = !rw(dev, fd, off, buf, len, DMABUF_EXP_RW_F_WRITE) && check_bytes(map + off, len, 9);
	result(ok && map[off - 1] == 0 && map[off + len] == 0, "rw_write_lands_where_mapped");
	for (i = 0; i < len; i++)
		map[off + i] = pat(i, 10);
	memset(buf, 0, size);
	ok = !rw(dev, fd, off, buf, len, 0) && check_bytes(buf, len, 10);
	result(ok, "rw_read_sees_the_mapping");
	ok = !migrate(dev, fd, 20) && !rw(dev, fd, off, buf, len, 0) && check_bytes(buf, len, 10);
	result(ok, "rw_read_after_pending_migration");
	errno_case("rw_beyond_size", rw(dev, fd, size - 4, buf, 8, 0), EINVAL);
	errno_case("rw_offset_overflow", rw(dev, fd, ~0ULL, buf, 2, 0), EINVAL);
	errno_case("rw_unknown_flags", rw(dev, fd, 0, buf, 8, 0x80), EINVAL);
	errno_case("rw_bad_data_pointer", rw(dev, fd, 0, (void *)8, PAGE, 0), EFAULT);
	errno_case("rw_bad_fd", rw(dev, 12345, 0, buf, 8, 0), EBADF);
	errno_case("rw_not_a_dmabuf", rw(dev, dev, 0, buf, 8, 0), EINVAL);
	err = stats(dev, fd, &st);
	result(!err && st.devmem_offset == DMABUF_EXP_NO_OFFSET &&
	       st.placement == DMABUF_EXP_PLACEMENT_SYSTEM,
	       "system_memory_has_no_devmem_offset (%#llx)",
	       (unsigned long long)st.devmem_offset);
out:
	if (map != MAP_FAILED)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	free(buf);
}

/* DMABUF_EXP_IOC_REVOKE on @fd with @flags as given; 0 or the errno. */
static int revoke_flags(int dev, int fd, __u32 flags)
{
	struct dmabuf_exp_revoke r = { .version = DMABUF_EXP_VERSION, .fd = fd, .flags = flags };

	return ioctl(dev, DMABUF_EXP_IOC_REVOKE, &r) ? errno : 0;
}

/* DMABUF_EXP_IOC_LATENCY on @fd with @version, no room; 0 or the errno. */
static int latency_version(int dev, int fd, __u32 version)
{
	struct dmabuf_exp_latency l = { .version = version, .fd = fd };

	return ioctl(dev, DMABUF_EXP_IOC_LATENCY, &l) ? errno : 0;
}

/*
 * The revocable mode and the latency samples without an importer (the rxe
 * tests have one): who may be revoked, in which state, and what is refused.
 */
static void revoke_latency_case(int dev)
{
	struct dmabuf_exp_latency l;
	struct dmabuf_exp_revoke r;
	int err, fd, dyn, sfd;
	__u64 samples[4];

	create(dev, DMABUF_EXP_F_REVOCABLE, PAGE, NULL, 0, &err);
	errno_case("revocable_without_dynamic", err, EINVAL);
	fd = create(dev, DMABUF_EXP_F_DYNAMIC | DMABUF_EXP_F_REVOCABLE, PAGE, NULL, 0, &err);
	dyn = create(dev, DMABUF_EXP_F_DYNAMIC, PAGE, NULL, 0, &err);
	sfd = create(dev, 0, PAGE, NULL, 0, &err);
	result(fd >= 0 && dyn >= 0 && sfd >= 0, "revocable_dynamic_static_created");
	errno_case("revoke_unmapped", exp_revoke_fd(dev, fd, 0, &r), 0);
	result(r.wait_ns == 0 && r.unmapped == 0, "revoke_unmapped_waits_for_nothing");
	errno_case("revoke_revoked", exp_revoke_fd(dev, fd, 0, &r), EALREADY);
	errno_case("restore", exp_revoke_fd(dev, fd, 1, &r), 0);
	errno_case("restore_restored", exp_revoke_fd(dev, fd, 1, &r),
		   EALREADY);
	errno_case("revoke_unknown_flags", revoke_flags(dev, fd, 0x80), EINVAL);
	errno_case("revoke_not_revocable", exp_revoke_fd(dev, dyn, 0, &r), EINVAL);
	errno_case("revoke_static", exp_revoke_fd(dev, sfd, 0, &r), EINVAL);
	errno_case("revoke_bad_fd", exp_revoke_fd(dev, 12345, 0, &r), EBADF);
	errno_case("latency_static", exp_latency_fd(dev, sfd, samples, samples, 4, &l), EINVAL);
	errno_case("latency_bad_version", latency_version(dev, dyn, 0), EINVAL);
	errno_case("latency_none_yet", exp_latency_fd(dev, dyn, samples, samples, 4, &l), 0);
	result(!l.unmaps && !l.remaps && !l.dropped, "latency_no_samples_without_importers");
	/* A migration of an unmapped buffer times nothing. */
	errno_case("latency_after_unmapped_migration",
		   migrate(dev, dyn, 0) || exp_latency_fd(dev, dyn, samples, samples, 0, &l), 0);
	result(!l.unmaps && !l.remaps && !l.dropped, "latency_unmapped_migration_no_samples");
	close(fd);
	close(dyn);
	close(sfd);
}

int main(void)
{
	static const __u32 mixed[] = { 1, 4, 1, 8, 2 };
	static const __u32 big[] = { 512, 512 };
	static const __u32 bad3[] = { 3 };
	static const __u32 bad_sum[] = { 1, 2 };
	struct dmabuf_exp_migrate m;
	struct dmabuf_exp_stats st;
	struct dmabuf_exp_create c;
	int dev, err, fd, sfd, attached;

	ktap_on_term("dmabuf_exporter_user");
	dev = open("/dev/dmabuf_exporter_rs", O_RDWR | O_CLOEXEC);
	result(dev >= 0, "open_device");
	if (dev < 0)
		goto out;

	layout_case(dev, "single_pages", 64 * PAGE, NULL, 0);
	layout_case(dev, "mixed", 16 * PAGE, mixed, 5);
	layout_case(dev, "two_2mib_entries", 1024 * PAGE, big, 2);

	create(dev, 0, 0, NULL, 0, &err);
	errno_case("size_zero", err, EINVAL);
	create(dev, 0, PAGE + 1, NULL, 0, &err);
	errno_case("size_unaligned", err, EINVAL);
	create(dev, 0, DMABUF_EXP_MAX_SIZE + PAGE, NULL, 0, &err);
	errno_case("size_huge", err, EINVAL);
	create(dev, 0, ~0ULL & ~(PAGE - 1), NULL, 0, &err);
	errno_case("size_overflow", err, EINVAL);
	create(dev, 0x80, PAGE, NULL, 0, &err);
	errno_case("unknown_flags", err, EINVAL);
	create(dev, 0, 3 * PAGE, bad3, 1, &err);
	errno_case("chunk_not_power_of_two", err, EINVAL);
	create(dev, 0, 4 * PAGE, bad_sum, 2, &err);
	errno_case("chunks_do_not_add_up", err, EINVAL);
	create(dev, 0, PAGE, (const __u32 *)8, 1, &err);
	errno_case("chunks_bad_pointer", err, EFAULT);
	create(dev, 0, PAGE, NULL, DMABUF_EXP_MAX_CHUNKS + 1, &err);
	errno_case("too_many_chunks", err, EINVAL);
	memset(&c, 0, sizeof(c));
	c.version = 2;
	c.size = PAGE;
	errno_case("bad_version", ioctl(dev, DMABUF_EXP_IOC_CREATE, &c) ? errno : 0, EINVAL);
	errno_case("bad_struct_pointer",
		   ioctl(dev, DMABUF_EXP_IOC_CREATE, (void *)8) ? errno : 0, EFAULT);
	errno_case("unknown_ioctl", ioctl(dev, _IO(DMABUF_EXP_IOC_MAGIC, 99)) ? errno : 0, ENOTTY);
	create_result_unwritable_case(dev);
	rw_case(dev);
	module_held_case(dev);
	revoke_latency_case(dev);

	errno_case("migrate_bad_fd", migrate(dev, 12345, 0), EBADF);
	errno_case("migrate_not_a_dmabuf", migrate(dev, dev, 0), EINVAL);
	fd = create(dev, DMABUF_EXP_F_DYNAMIC, PAGE, NULL, 0, &err);
	errno_case("migrate_delay_too_long", migrate(dev, fd, DMABUF_EXP_MAX_DELAY_MS + 1), EINVAL);
	memset(&m, 0, sizeof(m));
	m.version = DMABUF_EXP_VERSION;
	m.fd = fd;
	m.flags = 0x80;
	errno_case("migrate_unknown_flags", ioctl(dev, DMABUF_EXP_IOC_MIGRATE, &m) ? errno : 0,
		   EINVAL);
	sfd = create(dev, 0, PAGE, NULL, 0, &err);
	errno_case("migrate_static", migrate(dev, sfd, 0), EOPNOTSUPP);
	errno_case("stats_bad_fd", stats(dev, 12345, &st), EBADF);
	errno_case("inject_bad_fd", inject(dev, DMABUF_EXP_VERSION, 12345, 0, 0), EBADF);
	errno_case("inject_not_a_dmabuf", inject(dev, DMABUF_EXP_VERSION, dev, 0, 0), EINVAL);
	errno_case("inject_bad_version", inject(dev, 0, fd, 0, 0), EINVAL);
	errno_case("inject_errno_above_4095", inject(dev, DMABUF_EXP_VERSION, fd, 4096, 0),
		   EINVAL);
	errno_case("inject_and_clear", inject(dev, DMABUF_EXP_VERSION, sfd, 12, 28) ||
		   inject(dev, DMABUF_EXP_VERSION, sfd, 0, 0), 0);
	errno_case("mmap_private_refused",
		   mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED ? errno : 0,
		   EINVAL);
	errno_case("mmap_beyond_size",
		   mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED ? errno : 0,
		   EINVAL);
	close(fd);
	close(sfd);
	close(dev);

	/* Nothing of ours may be left (-1: bufinfo unreadable). */
	err = dmabufs_of("dmabuf_exporter_rs", &attached);
	result(err == 0, "no_buffers_left (%d left)", err);
out:
	return ktap_report("dmabuf_exporter_user");
}
