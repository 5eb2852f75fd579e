/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KTAP output for the guest's userspace tests: record results with
 * result(), print them as one suite with ktap_report(). The guest
 * runner feeds the output to tools/testing/kunit/kunit.py parse.
 */
#ifndef KTAP_USER_H
#define KTAP_USER_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int ktap_tests, ktap_failures;
static char ktap_lines[16384];

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
 * failed "killed" case, so a hang still shows how far the test got. Only
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
	static const char kill_case[] = " killed_by_the_watchdog\n";
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
}

#endif /* KTAP_USER_H */
