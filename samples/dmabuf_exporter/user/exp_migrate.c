// SPDX-License-Identifier: GPL-2.0
/*
 * exp_migrate PID INTERVAL_MS [DELAY_MS [swap]]: migrates, every INTERVAL_MS,
 * each movable buffer of /dev/dmabuf_exporter_rs that process PID holds,
 * without the process knowing: its dma-buf fds are found in /proc/PID/fd and
 * duplicated with pidfd_getfd(). Each migration's copy fence signals after
 * DELAY_MS (default 1). A buffer moves to new memory of the same kind, or,
 * with "swap", from device memory to system memory and back, as a GPU
 * driver evicts VRAM and brings it back.
 *
 * Used to run programs we did not write (rdma-core's tests) on buffers that
 * move under them. Runs until PID exits or SIGTERM, then prints what it did
 * and how often the buffers' importers were notified and re-mapped, per
 * buffer (the exporter's STATS after its last migration). Exits 0 when at
 * least one migration notified an importer, 1 otherwise, 2 on usage errors.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dmabuf_exporter_rs.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define MAX_BUFS 4096

/*
 * The last counters seen of each buffer, by inode (a buffer may be migrated
 * through several fds, or closed and its inode reused later).
 */
struct buf {
	unsigned long ino;
	struct dmabuf_exp_stats s;
};

static struct buf bufs[MAX_BUFS];
static int nbufs;
static void record(unsigned long ino, const struct dmabuf_exp_stats *s)
{
	int i;

	for (i = 0; i < nbufs; i++) {
		if (bufs[i].ino == ino) {
			/* A new buffer on a reused inode starts again at 0. */
			if (s->migrations < bufs[i].s.migrations && nbufs < MAX_BUFS)
				break;
			bufs[i].s = *s;
			return;
		}
	}
	if (nbufs < MAX_BUFS) {
		bufs[nbufs].ino = ino;
		bufs[nbufs].s = *s;
		nbufs++;
	}
}

struct totals {
	unsigned long migrations, busy, failed, to_devmem;
};

/* Alternate buffers between device and system memory. */
static int swap_placement;

/* One pass over the fds of the target; counts into @t. */
static void pass(int pidfd, int dev, pid_t pid, unsigned int delay_ms, struct totals *t)
{
	char dir[64], path[320], link[128];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		struct dmabuf_exp_migrate m = { .version = DMABUF_EXP_VERSION };
		struct dmabuf_exp_stats s = { .version = DMABUF_EXP_VERSION };
		struct stat st;
		ssize_t n;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strstr(link, "dmabuf"))
			continue;
		fd = syscall(SYS_pidfd_getfd, pidfd, atoi(e->d_name), 0);
		if (fd < 0)
			continue;	/* closed meanwhile */
		m.fd = fd;
		m.delay_ms = delay_ms;
		s.fd = fd;
		if (swap_placement && !ioctl(dev, DMABUF_EXP_IOC_STATS, &s))
			m.flags = s.placement == DMABUF_EXP_PLACEMENT_DEVMEM ?
				  DMABUF_EXP_MIGRATE_F_TO_SYSTEM :
				  DMABUF_EXP_MIGRATE_F_TO_DEVMEM;
		if (!ioctl(dev, DMABUF_EXP_IOC_MIGRATE, &m)) {
			t->migrations++;
			t->to_devmem += m.flags == DMABUF_EXP_MIGRATE_F_TO_DEVMEM;
		} else if (errno == EBUSY) {
			t->busy++;	/* pinned by an importer */
		} else if (errno != EINVAL && errno != EOPNOTSUPP) {
			/* EINVAL: another exporter's buffer; EOPNOTSUPP: static */
			t->failed++;
			fprintf(stderr, "exp_migrate: MIGRATE fd %s: %s\n", e->d_name,
				strerror(errno));
		}
		if (!ioctl(dev, DMABUF_EXP_IOC_STATS, &s) && !fstat(fd, &st))
			record(st.st_ino, &s);
		close(fd);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	unsigned long notifies = 0, maps = 0, moved = 0;
	unsigned int interval_ms, delay_ms = 1;
	struct totals t = { 0 };
	struct pollfd pfd[2];
	int pidfd, dev, i;
	sigset_t term;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: exp_migrate PID INTERVAL_MS [DELAY_MS [swap]]\n");
		return 2;
	}
	pid = atoi(argv[1]);
	interval_ms = atoi(argv[2]);
	if (argc > 3)
		delay_ms = atoi(argv[3]);
	swap_placement = argc > 4 && !strcmp(argv[4], "swap");

	/* Stop on SIGTERM/SIGINT or when the target exits, whichever first. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	sigprocmask(SIG_BLOCK, &term, NULL);
	pfd[0].fd = signalfd(-1, &term, SFD_CLOEXEC);
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pfd[0].fd < 0 || pidfd < 0) {
		perror("exp_migrate: signalfd/pidfd_open");
		return 2;
	}
	pfd[1].fd = pidfd;
	pfd[0].events = POLLIN;
	pfd[1].events = POLLIN;
	dev = open("/dev/dmabuf_exporter_rs", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		perror("exp_migrate: open /dev/dmabuf_exporter_rs");
		return 2;
	}
	do {
		pass(pidfd, dev, pid, delay_ms, &t);
	} while (poll(pfd, 2, interval_ms) == 0);

	for (i = 0; i < nbufs; i++) {
		notifies += bufs[i].s.move_notifies;
		maps += bufs[i].s.maps;
		if (bufs[i].s.migrations)
			moved++;
	}
	printf("# exp_migrate: %lu migrations of %lu buffers (%d seen), %lu pinned, %lu failed\n",
	       t.migrations, moved, nbufs, t.busy, t.failed);
	printf("# exp_migrate: importers notified %lu times, %lu mappings made\n", notifies, maps);
	if (swap_placement)
		printf("# exp_migrate: %lu moves into device memory, %lu out of it\n",
		       t.to_devmem, t.migrations - t.to_devmem);
	/* With swap, buffers must have gone into device memory as well. */
	return t.failed == 0 && notifies > 0 && (!swap_placement || t.to_devmem) ? 0 : 1;
}
