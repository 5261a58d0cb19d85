/*
 * notify.h - the systemd notification protocol, spoken directly: a datagram
 * to $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace). Without
 * NOTIFY_SOCKET every call does nothing. See sd_notify(3).
 */
#ifndef SEEND_NOTIFY_H
#define SEEND_NOTIFY_H

/* Sends "READY=1", "RELOADING=1\nMONOTONIC_USEC=...", "STATUS=..." etc.
 * Returns 0, or -1 (logged once) if the socket cannot be reached. */
int	notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
