// SPDX-License-Identifier: GPL-2.0
/*
 * ktap_watch NAME STALL_S PID [PROGRESS_FILE]: the guest's watchdog for one
 * test (scripts/guest/lib.sh, ktap_run). Copies its standard input (the
 * test's output, through a FIFO) to its standard output as it comes, and
 * stops the test PID, with every process below it, once the test has made
 * no progress for STALL_S seconds: nothing new on the input and no growth
 * of PROGRESS_FILE (which the tests append to as they finish cases,
 * samples/include/ktap_user.h). There is no limit on the total time: a
 * slow test that keeps moving is never stopped. While the test is silent but
 * PROGRESS_FILE grows, a "# NAME: progress: LAST LINE" note is printed at
 * most every NOTE_S seconds, so that the host's watchdog, which reads only
 * the console, sees the progress too.
 *
 * On a stall it prints which test stalled, for how long, and the last thing
 * it reported, asks the kernel to log its blocked tasks (sysrq w), sends
 * SIGTERM (the tests then print what they recorded) and, 5 s later,
 * SIGKILL. A test that SIGKILL cannot end is blocked in the kernel (an
 * exporter's unbind waiting for memory an importer never gives back):
 * UNKILLABLE_S seconds after SIGKILL it is named, the blocked tasks are
 * logged again and the guest is rebooted at once (sysrq b; QEMU runs with
 * -no-reboot, so it exits), since nothing else would end the boot and the
 * host would wait for its own time limit. Exits 0 when the input ended or
 * PID is gone, 124 after a stall, 125 after asking for the reboot.
 *
 * For its self-test (scripts/selftest/runner.sh) the environment may name
 * another file for the SysRq keys (KTAP_WATCH_SYSRQ) and other waits
 * between SIGTERM and SIGKILL (KTAP_WATCH_GRACE_S) and after SIGKILL
 * (KTAP_WATCH_UNKILLABLE_S).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long long file_size(const char *path)
{
	struct stat st;

	return path && !stat(path, &st) ? (long long)st.st_size : -1;
}

/* The parent of process @pid, or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	int fd, n, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/* Sends @sig to @pid and to every process below it, children first. */
static void kill_tree(pid_t pid, int sig)
{
	struct dirent *e;
	DIR *d = opendir("/proc");
	pid_t child;

	while (d && (e = readdir(d))) {
		child = atoi(e->d_name);
		if (child > 0 && parent_of(child) == pid)
			kill_tree(child, sig);
	}
	if (d)
		closedir(d);
	kill(pid, sig);
}

/* The last line of the first @size bytes of file @path, in @line; 0 if none. */
static int last_line(const char *path, long long size, char *line, size_t len)
{
	char tail[200], *nl;
	off_t off = 0;
	ssize_t n;
	int fd;

	if (!path || size <= 0)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size > (long long)sizeof(tail) - 1)
		off = size - (sizeof(tail) - 1);
	n = pread(fd, tail, sizeof(tail) - 1, off);
	close(fd);
	while (n > 0 && tail[n - 1] == '\n')
		n--;
	if (n <= 0)
		return 0;
	tail[n] = 0;
	nl = strrchr(tail, '\n');
	snprintf(line, len, "%s", nl ? nl + 1 : tail);
	return 1;
}

/* Writes @c to the kernel's magic SysRq trigger. */
static void sysrq_key(char c)
{
	const char *path = getenv("KTAP_WATCH_SYSRQ");
	int fd = open(path ? path : "/proc/sysrq-trigger", O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0)
		return;
	if (write(fd, &c, 1) != 1)
		perror("ktap_watch: SysRq");
	close(fd);
}

#define NOTE_S 60
#define UNKILLABLE_S "60"

int main(int argc, char **argv)
{
	char buf[4096], last[200] = "", done[200];
	double stall, since, t, noted;
	const char *progress;
	long long size, seen;
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	int stalled = 0, eof = 0;
	double gone = 0, killed = 0, grace, unkillable;
	ssize_t n;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: ktap_watch NAME STALL_S PID [PROGRESS_FILE]\n");
		return 2;
	}
	stall = atof(argv[2]);
	grace = atof(getenv("KTAP_WATCH_GRACE_S") ?: "5");
	unkillable = atof(getenv("KTAP_WATCH_UNKILLABLE_S") ?: UNKILLABLE_S);
	pid = atoi(argv[3]);
	progress = argc > 4 ? argv[4] : NULL;
	seen = file_size(progress);
	since = now();
	noted = since;
	while (!eof) {
		if (poll(&pfd, 1, 1000) > 0) {
			n = read(0, buf, sizeof(buf) - 1);
			if (n <= 0) {
				eof = 1;
				break;
			}
			if (write(1, buf, n) != n)
				return 3;
			since = now();
			noted = since;
			/* The last line of what came, for the stall message. */
			while (n > 0 && buf[n - 1] == '\n')
				n--;
			buf[n] = 0;
			if (n) {
				char *start = strrchr(buf, '\n');

				snprintf(last, sizeof(last), "%.199s", start ? start + 1 : buf);
			}
		}
		t = now();
		size = file_size(progress);
		if (size != seen) {
			seen = size;
			since = t;
			if (t - noted >= NOTE_S && last_line(progress, size, done, sizeof(done))) {
				printf("# %s: progress: %s\n", argv[1], done);
				fflush(stdout);
				noted = t;
			}
		}
		/* The shell reaped the test; a child of it may hold the FIFO. */
		if (kill(pid, 0) && errno == ESRCH) {
			if (!gone)
				gone = t;
			else if (t - gone > 5)
				break;
		}
		if (!stalled && t - since >= stall) {
			stalled = 1;
			printf("# watchdog: %s made no progress for %.0f s (last output: \"%s\"",
			       argv[1], t - since, last);
			if (last_line(progress, size, done, sizeof(done)))
				printf("; last done: \"%s\"", done);
			printf("); stopping it, blocked tasks are in the kernel log\n");
			fflush(stdout);
			sysrq_key('w');
			kill_tree(pid, SIGTERM);
			usleep(grace * 1e6);
			kill_tree(pid, SIGKILL);
			killed = now();
		} else if (killed && !gone && t - killed >= unkillable) {
			printf("# watchdog: %s is still there %.0f s after SIGKILL, %s\n", argv[1],
			       t - killed, "blocked in the kernel: rebooting the guest");
			fflush(stdout);
			sysrq_key('w');
			sleep(2);
			sysrq_key('b');
			return 125;
		}
	}
	return stalled ? 124 : 0;
}
