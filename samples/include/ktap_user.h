/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KTAP output for the guest's userspace tests: record results with
 * result(), print them as one suite with ktap_report(). The guest
 * runner feeds the output to tools/testing/kunit/kunit.py parse.
 *
 * The suite is printed at the end, so the output says nothing while the
 * test runs. The guest's watchdog (ktap_watch, scripts/guest/lib.sh) judges
 * progress instead by the file named by $KTAP_PROGRESS, to which every
 * result() and every ktap_progress() appends a line: a test is stopped
 * when that file has not grown for a stall interval, however long it runs
 * in all.
 */
#ifndef KTAP_USER_H
#define KTAP_USER_H

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int ktap_tests, ktap_failures;
static char ktap_lines[16384];
/* What the test was doing last (for ktap_term()); NUL-terminated. */
static char ktap_doing[200];

/*
 * Records that the test moved on to @what (a case name, a phase): appends
 * it to $KTAP_PROGRESS, if set, for the watchdog.
 */
static void ktap_progress(const char *what)
{
	static int fd = -2;
	char line[sizeof(ktap_doing) + 1];
	size_t n;

	snprintf(ktap_doing, sizeof(ktap_doing), "%s", what);
	if (fd == -2) {
		const char *path = getenv("KTAP_PROGRESS");

		fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
	}
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%s\n", what);
	if (write(fd, line, n < sizeof(line) ? n : sizeof(line) - 1) < 0)
		fd = -1;
}

static void result(int ok, const char *fmt, ...)
{
	size_t used = strlen(ktap_lines);
	char name[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	ktap_tests++;
	if (!ok)
		ktap_failures++;
	snprintf(ktap_lines + used, sizeof(ktap_lines) - used, "    %sok %d %s\n",
		 ok ? "" : "not ", ktap_tests, name);
	ktap_progress(name);
}

/* Prints the suite; returns the process exit status. */
static int ktap_report(const char *suite)
{
	printf("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: %s\n", suite);
	printf("    1..%d\n%s%sok 1 %s\n", ktap_tests, ktap_lines,
	       ktap_failures ? "not " : "", suite);
	return ktap_failures ? 1 : 0;
}

/*
 * SIGTERM (the guest's watchdog) prints what was recorded so far plus a
 * failed "killed" case that names what the test was doing (the last
 * ktap_progress()), so a hang still shows how far the test got. Only
 * write() is used: it is async-signal-safe.
 */
static char ktap_head[256], ktap_foot[256];

static void ktap_write(const char *s, size_t n)
{
	if (write(1, s, n) < 0)
		_exit(3);
}

static void ktap_term(int sig)
{
	static const char kill_case[] = " killed_by_the_watchdog (after: ";
	char num[32] = "    not ok ";
	int n = ktap_tests + 1, i = 11, d;

	(void)sig;
	for (d = 1; d * 10 <= n; d *= 10)
		;
	for (; d; d /= 10)
		num[i++] = '0' + (n / d) % 10;
	ktap_write(ktap_head, strlen(ktap_head));
	ktap_write(ktap_lines, strlen(ktap_lines));
	ktap_write(num, i);
	ktap_write(kill_case, sizeof(kill_case) - 1);
	ktap_write(ktap_doing, strnlen(ktap_doing, sizeof(ktap_doing) - 1));
	ktap_write(")\n", 2);
	ktap_write(ktap_foot, strlen(ktap_foot));
	_exit(2);
}

/* Call first: prepares the output of ktap_term() for @suite. */
static void ktap_on_term(const char *suite)
{
	snprintf(ktap_head, sizeof(ktap_head),
		 "KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: %s\n", suite);
	snprintf(ktap_foot, sizeof(ktap_foot), "not ok 1 %s\n", suite);
	signal(SIGTERM, ktap_term);
	/* The output goes to a pipe (ktap_watch): a line at a time, as on a tty. */
	setvbuf(stdout, NULL, _IOLBF, 0);
}

#endif /* KTAP_USER_H */
