/*
 * notify.c - sd_notify(3) without libsystemd; see notify.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"

int
notify_send(const char *fmt, ...)
{
	const char		*path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un	 sun;
	socklen_t		 slen;
	char			 msg[1024];
	va_list			 ap;
	int			 fd, n;
	static int		 warned;

	if (path == NULL || path[0] == '\0')
		return 0;
	if ((path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sun.sun_path)) {
		if (!warned++)
			log_warn("NOTIFY_SOCKET=%s: unsupported address", path);
		return -1;
	}
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path));
	slen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(path));
	if (path[0] == '@')
		sun.sun_path[0] = '\0';	/* the abstract namespace */
	else
		slen++;
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (sendto(fd, msg, (size_t)n, MSG_NOSIGNAL,
	    (struct sockaddr *)&sun, slen) == -1) {
		if (!warned++)
			log_warn("notify %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}
