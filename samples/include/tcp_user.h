/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The TCP side channel of the guests' two-machine programs (rxe_2node,
 * rxe_deadqp): each side's QP number, GID and keys go over it before the
 * RDMA traffic starts.
 */
#ifndef TCP_USER_H
#define TCP_USER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Sends (@out) or receives all @len bytes at @buf; 0 or -1. */
static inline int full_io(int fd, void *buf, size_t len, int out)
{
	char *p = buf;

	while (len) {
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/* Accepts one connection on TCP @port; the connected socket or -1. */
static inline int listen_on(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, c;

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1))
		return -1;
	c = accept(s, NULL, NULL);
	close(s);
	if (c >= 0)
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return c;
}

/*
 * Connects to @ip:@port, retrying for up to ten minutes; the socket or -1.
 */
static inline int connect_to(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	/* The server guest boots beside this one, seconds ahead or behind. */
	time_t end = time(NULL) + 600;
	int s, one = 1;

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		return -1;
	while (time(NULL) < end) {
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return -1;
		if (!connect(s, (struct sockaddr *)&a, sizeof(a))) {
			setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return s;
		}
		close(s);
		sleep(1);
	}
	return -1;
}

#endif
