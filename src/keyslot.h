/*
 * keyslot.h - the slot of a key among Redis Cluster's 16384: what routes a
 * request to a node, and what lays a partitioned filter's blocks out slot
 * by slot (filter.h). A leaf: no state but the tables built on first use.
 */
#ifndef SEEND_KEYSLOT_H
#define SEEND_KEYSLOT_H

#include <stddef.h>
#include <stdint.h>

#define KEYSLOT_COUNT	16384	/* as Redis Cluster's */
#define KEYSLOT_BITS	14	/* log2(KEYSLOT_COUNT) */

/* CRC16/XMODEM (poly 0x1021, init 0), Redis Cluster's: "123456789" is
 * 0x31c3. */
uint16_t	 keyslot_crc16(const void *, size_t);
/*
 * The slot of a key, as Redis's keyHashSlot: the CRC16 of the key, or of
 * what is between its first "{" and the first "}" after it when that is
 * not empty, modulo 16384.
 */
unsigned	 keyslot_of(const char *key, size_t len);

#endif
