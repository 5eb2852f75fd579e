// SPDX-License-Identifier: GPL-2.0
/*
 * heap_exec SIZE COMMAND [ARG...]: allocates a buffer of SIZE bytes from the
 * system dma-heap and runs COMMAND with it open, as a descriptor COMMAND
 * inherits; every "@FD@" in an ARG becomes that descriptor's number.
 *
 * For the real-tables boot (scripts/guest/real_tables.sh): KUnit suites run
 * when their module goes live, in the insmod process, so
 *   heap_exec 65536 insmod umem_dmabuf_rs.ko kunit=1 kunit_heap_fd=@FD@
 * hands the module's heap suite a buffer of the kernel's own exporter, which
 * no kernel interface lets a module allocate by itself.
 *
 * Exits 2 when the buffer cannot be had, else as COMMAND does (127 if it
 * cannot be run).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "exporters_user.h"

#define FD_MARK "@FD@"

/* ARG with each FD_MARK replaced by @num; NULL when out of memory. */
static char *with_fd(const char *arg, const char *num)
{
	size_t marks = 0, len;
	const char *p;
	char *out, *o;

	for (p = strstr(arg, FD_MARK); p; p = strstr(p + strlen(FD_MARK), FD_MARK))
		marks++;
	len = strlen(arg) + marks * strlen(num) + 1;
	out = malloc(len);
	if (!out)
		return NULL;
	for (o = out; *arg;) {
		if (!strncmp(arg, FD_MARK, strlen(FD_MARK))) {
			o = stpcpy(o, num);
			arg += strlen(FD_MARK);
		} else {
			*o++ = *arg++;
		}
	}
	*o = '\0';
	return out;
}

int main(int argc, char **argv)
{
	char num[16], *end;
	unsigned long size;
	int fd, err, i;

	if (argc < 3) {
		fprintf(stderr, "usage: heap_exec SIZE COMMAND [ARG...]\n");
		return 2;
	}
	errno = 0;
	size = strtoul(argv[1], &end, 0);
	if (errno || *end || !size) {
		fprintf(stderr, "heap_exec: bad size '%s'\n", argv[1]);
		return 2;
	}
	fd = heap_alloc(size, &err);
	if (fd < 0) {
		fprintf(stderr, "heap_exec: no %lu-byte buffer from the system heap: %s\n",
			size, strerror(err));
		return 2;
	}
	/* heap_alloc() asks for O_CLOEXEC; this one is for COMMAND. */
	if (fcntl(fd, F_SETFD, 0)) {
		perror("heap_exec: F_SETFD");
		return 2;
	}
	snprintf(num, sizeof(num), "%d", fd);
	for (i = 2; i < argc; i++) {
		argv[i] = with_fd(argv[i], num);
		if (!argv[i]) {
			fprintf(stderr, "heap_exec: out of memory\n");
			return 2;
		}
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "heap_exec: cannot run %s: %s\n", argv[2], strerror(errno));
	return 127;
}
