/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel coverage for the guest's fuzzer (make fuzz): the program counters
 * KCOV records while this thread runs in the instrumented kernel code
 * (kernel/fuzz.config), turned into AFL++'s edge map, and the kernel's own
 * reports (KASAN, UBSAN, lockdep, WARN, BUG) noticed as they are printed.
 *
 * kcov_open() before the operations, kcov_start() and kcov_stop() around
 * them; kcov_to_afl() fills the map AFL++ shares through $__AFL_SHM_ID
 * (System V shared memory: AFL++ runs the program once per input, without
 * a fork server, so the map is attached anew each time). Without KCOV or
 * outside AFL++ every function does nothing and reports so.
 */
#ifndef KCOV_USER_H
#define KCOV_USER_H

#include <errno.h>
#include <fcntl.h>
#include <linux/kcov.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

/* Program counters per run, at most (the instrumented objects are small). */
#define KCOV_WORDS 0x100000UL
/* AFL++'s default map size (MAP_SIZE), a power of two. */
#define AFL_MAP 0x10000U

static int kcov_fd = -1;
static unsigned long *kcov_area;

/* Opens this thread's KCOV; 0, or -1 (no KCOV in this kernel). */
static int kcov_open(void)
{
	kcov_fd = open("/sys/kernel/debug/kcov", O_RDWR);
	if (kcov_fd < 0)
		return -1;
	if (ioctl(kcov_fd, KCOV_INIT_TRACE, KCOV_WORDS))
		goto fail;
	kcov_area = mmap(NULL, KCOV_WORDS * sizeof(unsigned long), PROT_READ | PROT_WRITE,
			 MAP_SHARED, kcov_fd, 0);
	if (kcov_area == MAP_FAILED)
		goto fail;
	return 0;
fail:
	kcov_area = NULL;
	close(kcov_fd);
	kcov_fd = -1;
	return -1;
}

static void kcov_start(void)
{
	if (kcov_fd < 0 || ioctl(kcov_fd, KCOV_ENABLE, KCOV_TRACE_PC))
		return;
	__atomic_store_n(&kcov_area[0], 0, __ATOMIC_RELAXED);
}

/* Stops recording; the number of program counters recorded. */
static unsigned long kcov_stop(void)
{
	unsigned long n;

	if (kcov_fd < 0)
		return 0;
	n = __atomic_load_n(&kcov_area[0], __ATOMIC_RELAXED);
	ioctl(kcov_fd, KCOV_DISABLE, 0);
	return n < KCOV_WORDS - 1 ? n : KCOV_WORDS - 1;
}

/* The @i-th recorded program counter (from 0). */
static unsigned long kcov_pc(unsigned long i)
{
	return kcov_area[i + 1];
}

static __u32 kcov_mix(unsigned long pc)
{
	__u64 x = pc;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (__u32)x;
}

/*
 * Counts the @n recorded edges (pairs of consecutive program counters) in
 * AFL++'s map, as its compilers' instrumentation would; 0, or -1 when not
 * run by AFL++.
 */
static int kcov_to_afl(unsigned long n)
{
	const char *id = getenv("__AFL_SHM_ID");
	unsigned char *map;
	__u32 prev = 0, cur;
	unsigned long i;

	if (!id)
		return -1;
	map = shmat(atoi(id), NULL, 0);
	if (map == (void *)-1)
		return -1;
	for (i = 0; i < n; i++) {
		cur = kcov_mix(kcov_pc(i)) & (AFL_MAP - 1);
		map[cur ^ prev]++;
		prev = cur >> 1;
	}
	shmdt(map);
	return 0;
}

/* Opens the kernel log at its end, to read what is printed from now on. */
static int klog_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * Whether the kernel reported a bug since klog_open() (@fd, closed here):
 * the first line of a KASAN, UBSAN, lockdep, WARN or BUG report, printed
 * to stderr.
 */
static int klog_reported(int fd)
{
	static const char *const marks[] = {
		"BUG:", "WARNING:", "UBSAN:", "KASAN:", "possible circular locking",
		"inconsistent lock state", "possible recursive locking", "kernel BUG",
		"general protection fault", "INFO: task", "unreferenced object", NULL,
	};
	char rec[1024];
	unsigned int i;
	ssize_t len;
	int found = 0;

	if (fd < 0)
		return 0;
	for (;;) {
		len = read(fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue;	/* overwritten records: read on */
		if (len <= 0)
			break;
		rec[len] = 0;
		for (i = 0; marks[i] && !found; i++)
			if (strstr(rec, marks[i])) {
				fprintf(stderr, "kernel report: %s", strchr(rec, ';') ?
					strchr(rec, ';') + 1 : rec);
				found = 1;
			}
	}
	close(fd);
	return found;
}

#endif /* KCOV_USER_H */
