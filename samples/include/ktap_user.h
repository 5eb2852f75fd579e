/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KTAP output for the guest's userspace tests: record results with
 * result(), print them as one suite with ktap_report(). The guest
 * runner feeds the output to tools/testing/kunit/kunit.py parse.
 */
#ifndef KTAP_USER_H
#define KTAP_USER_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

#endif /* KTAP_USER_H */
