/*
 * pio.h -- the one table of system calls used by persist/.
 *
 * Every system call the WAL (and the rest of persist/) makes goes through
 * this table, in the manner of SQLite's aSyscall[]: a test replaces one entry
 * (a pwrite that fails with ENOSPC, an fdatasync that sleeps before it
 * returns) and the code under test cannot tell.  Production code never
 * changes the table.
 *
 * Synchronization: pio_override() and pio_reset() may run while other threads
 * call through the table; a caller sees either the old or the new entry
 * (relaxed atomic pointer loads).  A test that swaps an entry back must make
 * sure no thread is still inside the replaced function before freeing
 * anything that function uses.
 *
 * Results: each entry keeps its system call's own convention (-1 with errno
 * set, or a byte count).  That convention ends at its caller: no function of
 * persist/ passes a pio result on as a result code; the WAL and the
 * snapshotter turn a failure into FLASH_ESYS, each with the errno in its
 * message, so -1 only ever means FLASH_ESOLD_OUT to a caller.
 */
#ifndef FLASH_PIO_H
#define FLASH_PIO_H

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Index of each entry; pio_override() takes the name ("pwrite"). */
enum pio_id {
	PIO_OPEN = 0,   /* int   open(const char *, int, mode_t)              */
	PIO_CLOSE,      /* int   close(int)                                   */
	PIO_PREAD,      /* ssize_t pread(int, void *, size_t, off_t)          */
	PIO_PWRITE,     /* ssize_t pwrite(int, const void *, size_t, off_t)   */
	PIO_FDATASYNC,  /* int   fdatasync(int)                               */
	PIO_FSYNC,      /* int   fsync(int)                                   */
	PIO_FTRUNCATE,  /* int   ftruncate(int, off_t)                        */
	PIO_FALLOCATE,  /* int   fallocate(int fd, off_t off, off_t len): -1 + errno */
	PIO_FSTAT,      /* int   fstat(int, struct stat *)                    */
	PIO_RENAME,     /* int   rename(const char *, const char *)           */
	PIO_UNLINK,     /* int   unlink(const char *)                         */
	PIO_MKDIR,      /* int   mkdir(const char *, mode_t)                  */
	PIO_MMAP,       /* void *mmap(void *, size_t, int, int, int, off_t)   */
	PIO_MUNMAP,     /* int   munmap(void *, size_t)                       */
	PIO_OPENDIR,    /* DIR  *opendir(const char *)                        */
	PIO_READDIR,    /* struct dirent *readdir(DIR *)                      */
	PIO_CLOSEDIR,   /* int   closedir(DIR *)                              */
	PIO_FLOCK,      /* int   flock(int, int)                              */
	PIO_COUNT
};

typedef void (*pio_fn)(void);

/* The current entry for @p id (never NULL). */
pio_fn pio_get(enum pio_id id);

/*
 * Replace the entry named @p name ("pwrite", "fdatasync", ...) by @p fn, or
 * restore the default when @p fn is NULL.
 * @param[out] old  the entry it replaced (may be NULL)
 * @return 0; -1 for an unknown name.
 */
int pio_override(const char *name, pio_fn fn, pio_fn *old);

/* The default (real) entry for @p name, or NULL for an unknown name. */
pio_fn pio_default(const char *name);

/* Restore every default entry. */
void pio_reset(void);

/* Typed calls through the table.  Same contract as the system call. */
static inline int pio_open(const char *p, int fl, mode_t m)
{ return ((int (*)(const char *, int, mode_t))pio_get(PIO_OPEN))(p, fl, m); }
static inline int pio_close(int fd)
{ return ((int (*)(int))pio_get(PIO_CLOSE))(fd); }
static inline ssize_t pio_pread(int fd, void *b, size_t n, off_t off)
{ return ((ssize_t (*)(int, void *, size_t, off_t))pio_get(PIO_PREAD))(fd, b, n, off); }
static inline ssize_t pio_pwrite(int fd, const void *b, size_t n, off_t off)
{ return ((ssize_t (*)(int, const void *, size_t, off_t))pio_get(PIO_PWRITE))(fd, b, n, off); }
static inline int pio_fdatasync(int fd)
{ return ((int (*)(int))pio_get(PIO_FDATASYNC))(fd); }
static inline int pio_fsync(int fd)
{ return ((int (*)(int))pio_get(PIO_FSYNC))(fd); }
static inline int pio_ftruncate(int fd, off_t len)
{ return ((int (*)(int, off_t))pio_get(PIO_FTRUNCATE))(fd, len); }
static inline int pio_fallocate(int fd, off_t off, off_t len)
{ return ((int (*)(int, off_t, off_t))pio_get(PIO_FALLOCATE))(fd, off, len); }
static inline int pio_fstat(int fd, struct stat *st)
{ return ((int (*)(int, struct stat *))pio_get(PIO_FSTAT))(fd, st); }
static inline int pio_rename(const char *a, const char *b)
{ return ((int (*)(const char *, const char *))pio_get(PIO_RENAME))(a, b); }
static inline int pio_unlink(const char *p)
{ return ((int (*)(const char *))pio_get(PIO_UNLINK))(p); }
static inline int pio_mkdir(const char *p, mode_t m)
{ return ((int (*)(const char *, mode_t))pio_get(PIO_MKDIR))(p, m); }
static inline void *pio_mmap(void *a, size_t n, int prot, int fl, int fd, off_t off)
{ return ((void *(*)(void *, size_t, int, int, int, off_t))pio_get(PIO_MMAP))(a, n, prot, fl, fd, off); }
static inline int pio_munmap(void *a, size_t n)
{ return ((int (*)(void *, size_t))pio_get(PIO_MUNMAP))(a, n); }
static inline DIR *pio_opendir(const char *p)
{ return ((DIR *(*)(const char *))pio_get(PIO_OPENDIR))(p); }
static inline struct dirent *pio_readdir(DIR *d)
{ return ((struct dirent *(*)(DIR *))pio_get(PIO_READDIR))(d); }
static inline int pio_closedir(DIR *d)
{ return ((int (*)(DIR *))pio_get(PIO_CLOSEDIR))(d); }
static inline int pio_flock(int fd, int op)
{ return ((int (*)(int, int))pio_get(PIO_FLOCK))(fd, op); }

/*
 * Helpers built on the table (they call only pio_* entries).
 */

/* pwrite all @p n bytes, retrying EINTR.  A short write is retried for the
 * remainder exactly once; a second short write fails with errno = EIO unless
 * the call set errno itself.  @return 0 or -1 with errno set. */
int pio_pwrite_full(int fd, const void *buf, size_t n, off_t off);

/* pread up to @p n bytes, retrying EINTR and short reads until EOF.
 * @return bytes read (less than n only at end of file) or -1 with errno. */
ssize_t pio_pread_full(int fd, void *buf, size_t n, off_t off);

/* fsync a directory so that a create, rename or unlink in it is durable.
 * @return 0 or -1 with errno. */
int pio_fsync_dir(const char *dir);

/*
 * The errno of pio_open_reg() for a name that is not a regular file.  Linux
 * has no EFTYPE; EMEDIUMTYPE ("wrong medium type") is what no file call of
 * persist/ returns otherwise, so it cannot be mistaken for another failure.
 */
#define PIO_ENOTREG EMEDIUMTYPE

/*
 * Open a file of a WAL directory -- a WAL file, DURABLE, LOCK, a snapshot,
 * a feed position or lock file, the lease intent: every one of them opens
 * here.  Anything but a regular file under the name is refused: a FIFO
 * would block open() until a writer comes (for ever, and no signal but
 * SIGKILL ends that wait), a directory or a device would fail later with a
 * misleading errno (ENODEV from mmap) or be read as garbage.
 *
 * The open carries O_NONBLOCK, so a FIFO opens (or fails with ENXIO) at
 * once; fstat() then decides, and O_NONBLOCK is cleared again before a
 * regular file's descriptor is returned.  An open that failed because of
 * what the name is (EISDIR, ENXIO) is refused the same way.
 * @return the descriptor; -1 with errno: PIO_ENOTREG (pio_strerror() says
 *         "<path> is a FIFO, not a regular file"), or open()'s or fstat()'s.
 */
int pio_open_reg(const char *path, int flags, mode_t mode);

/*
 * strerror() for an errno that a pio call returned: for PIO_ENOTREG the
 * sentence of this thread's last refusal by pio_open_reg() (which file, and
 * what it is), as dlerror() keeps its last message; strerror() otherwise.
 * The string stays valid until the thread's next refusal.
 */
const char *pio_strerror(int err_no);

/* "<prefix><16 lowercase hex digits>.<ext>": 1 and *v on a match, else 0. */
int pio_hex16_name(const char *name, const char *prefix, const char *ext, uint64_t *v);

/* The numbers that @p match finds in the names of @p dir's entries
 * (match returns nonzero and sets *v for a name it takes), sorted
 * ascending, in *vals (malloc'd; NULL when none).  A missing directory is
 * an empty list.  @return 0; -1 with errno (ENOMEM, or a readdir failure). */
int pio_dir_numbers(const char *dir, int (*match)(const char *name, const void *arg, uint64_t *v),
                    const void *arg, uint64_t **vals, size_t *n);

/*
 * Test hook (power cuts).  With FLASH_TEST_SYNC_LOG=FILE in the environment,
 * pwrite and fdatasync are replaced by wrappers that append one line to FILE
 * per call that succeeded:
 *   "write DEV INO OFF END"  a pwrite wrote bytes OFF..END-1 of that file;
 *   "sync DEV INO END"       an fdatasync of it returned: every byte written
 *                            to it before the call began (below END) is on disk.
 * A test that kills the process (SIGKILL: the lines are in the page cache by
 * then) and zeroes each file's bytes written above its highest sync END has
 * made a power cut: the unsynced tail is dropped, as test_wal_crash.c drops
 * it in process.  FLASH_TEST_SYNC_DELAY_MS=N makes each fdatasync sleep N ms
 * before it starts (a slow disk), which holds that window open, and
 * FLASH_TEST_SYNC_HOLD=PATH makes each one wait while PATH exists (a disk
 * that does not return, until the test removes PATH).  Called once
 * by the daemon (tools/cmd_serve.c) before it writes anything; without
 * FLASH_TEST_SYNC_LOG nothing changes.  Never set in production.
 * @return 0; -1 with errno (FILE cannot be opened).
 */
int pio_test_sync_log(void);

#endif /* FLASH_PIO_H */
