/*
 * crc32c.h -- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * The implementation is chosen once, on first use: the SSE4.2 crc32
 * instruction where the CPU has it, a slicing-by-8 table otherwise.  Both give
 * the same values; crc32c("123456789") = 0xE3069283.
 *
 * Thread-safe; no state besides the one-time choice.
 */
#ifndef FLASH_CRC32C_H
#define FLASH_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * Continue a CRC-32C over @p n bytes.  Start with crc = 0; feeding a buffer in
 * pieces gives the same result as feeding it at once:
 *   crc32c(crc32c(0, a, na), b, nb) == crc32c(0, a||b, na+nb)
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t n);

/* The table version, always available (for tests and the benchmark). */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t n);

/* The SSE4.2 version; call only when crc32c_hw_available() is nonzero. */
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t n);

/* Nonzero if this CPU has the SSE4.2 crc32 instruction. */
int crc32c_hw_available(void);

/* "sse4.2" or "table": which implementation crc32c() uses. */
const char *crc32c_impl(void);

#endif /* FLASH_CRC32C_H */
