/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What debugfs says about dma-bufs, for the guest's userspace tests: how
 * many buffers an exporter has alive and how many devices are attached to
 * them (/sys/kernel/debug/dma_buf/bufinfo).
 */
#ifndef BUFINFO_USER_H
#define BUFINFO_USER_H

#include <stdio.h>
#include <string.h>

/*
 * Scans debugfs bufinfo: returns how many buffers of exporter @exp exist
 * (-1 if bufinfo cannot be read) and adds their attachments to *attached.
 */
static inline int dmabufs_of(const char *exp, int *attached)
{
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");
	int n = 0, mine = 0, count;
	char line[512];

	*attached = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Total %d devices attached", &count) == 1) {
			if (mine)
				*attached += count;
			mine = 0;
		} else if (line[0] != '\t' && strstr(line, exp)) {
			mine = 1;
			n++;
		}
	}
	fclose(f);
	return n;
}

#endif /* BUFINFO_USER_H */
