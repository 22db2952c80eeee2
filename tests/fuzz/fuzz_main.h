/*
 * fuzz_main.h -- the replay driver of the fuzz targets tests/fuzz/fuzz_wal.c and
 * tests/fuzz/fuzz_attach.c when they are built without libFuzzer (gcc, ctest).
 *
 * Included once, at the end of a target's file, under #ifndef
 * FLASH_LIBFUZZER.  The program
 *
 *     fuzz_<target> [rounds] [corpus file or directory ...]
 *
 * feeds LLVMFuzzerTestOneInput() every corpus input (directories are read
 * in name order), then @p rounds mutations of them drawn from a fixed
 * generator, so a run is repeatable byte for byte.  The mutations are the
 * usual ones (bit flips, interesting values, inserts, deletes, copies,
 * truncation) plus a flip of the first two bytes, which every target here
 * reads as its control bytes.  A broken promise aborts inside the target,
 * an input running over 10 s counts as a hang; either way the input is saved
 * as ./fuzz-crash-<pid>.  Reaching the end prints one line and exits 0.
 *
 * The target may define FUZZ_MAIN_HOOK(argc, argv): it runs first and, when
 * it returns >= 0, ends the program with that status (corpus makers).
 */
#ifndef FLASH_FUZZ_MAIN_H
#define FLASH_FUZZ_MAIN_H

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FZ_INPUT_MAX (1u << 16)

/* The input being run, written out by fz_on_fault() when a promise breaks. */
static const uint8_t *fz_cur;
static size_t fz_cur_n;

struct fz_seed {
	uint8_t *p;
	size_t   n;
};

static struct fz_seed *fz_seeds;
static size_t fz_nseeds, fz_capseeds;
static uint64_t fz_rng = 0x9e3779b97f4a7c15ull;

static uint64_t fz_next(void)
{
	fz_rng ^= fz_rng << 13;
	fz_rng ^= fz_rng >> 7;
	fz_rng ^= fz_rng << 17;
	return fz_rng;
}

static void fz_seed_add_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;
	size_t n;

	if (f == NULL) {
		perror(path);
		exit(2);
	}
	p = malloc(FZ_INPUT_MAX);
	if (p == NULL)
		abort();
	n = fread(p, 1, FZ_INPUT_MAX, f);
	fclose(f);
	if (fz_nseeds == fz_capseeds) {
		fz_capseeds = fz_capseeds ? 2 * fz_capseeds : 64;
		fz_seeds = realloc(fz_seeds, fz_capseeds * sizeof(*fz_seeds));
		if (fz_seeds == NULL)
			abort();
	}
	fz_seeds[fz_nseeds].p = p;
	fz_seeds[fz_nseeds].n = n;
	fz_nseeds++;
}

static int fz_cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void fz_seed_add(const char *path)
{
	struct stat st;
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *e;
	DIR *d;

	if (stat(path, &st) != 0) {
		perror(path);
		exit(2);
	}
	if (!S_ISDIR(st.st_mode)) {
		fz_seed_add_file(path);
		return;
	}
	if ((d = opendir(path)) == NULL) {
		perror(path);
		exit(2);
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			if (names == NULL)
				abort();
		}
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), fz_cmp_name);
	for (i = 0; i < n; i++) {
		char full[4096];

		snprintf(full, sizeof(full), "%s/%s", path, names[i]);
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode))
			fz_seed_add_file(full);
		free(names[i]);
	}
	free(names);
}

/*
 * A broken promise (abort) or a fault: save the input that caused it as
 * ./fuzz-crash-<pid> (replay it with "<target> 0 fuzz-crash-<pid>"), then
 * die of the same signal.
 */
static void fz_on_fault(int sig)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "fuzz-crash-%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, fz_cur, fz_cur_n) != (ssize_t)fz_cur_n)
			(void)0;
		close(fd);
		if (write(2, "input saved as ", 15) > 0 && write(2, path, strlen(path)) > 0)
			(void)write(2, "\n", 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* An input still running after FZ_INPUT_SECONDS hangs: that is a failure too. */
#define FZ_INPUT_SECONDS 10

static void fz_on_alarm(int sig)
{
	static const char m[] = "input still running after 10 s: a hang\n";

	(void)sig;
	if (write(2, m, sizeof(m) - 1) < 0)
		(void)0;
	fz_on_fault(SIGABRT);
}

static void fz_run(const uint8_t *p, size_t n)
{
	fz_cur = p;
	fz_cur_n = n;
	alarm(FZ_INPUT_SECONDS);
	LLVMFuzzerTestOneInput(p, n);
	alarm(0);
}

/* One mutation of @p buf (length *len, capacity FZ_INPUT_MAX). */
static void fz_mutate_once(uint8_t *buf, size_t *len)
{
	static const uint64_t interesting[] = {
		0, 1, 2, 7, 8, 15, 16, 63, 64, 255, 4096, 65535, 1ull << 20, (1ull << 20) + 1,
		0x7fffffffull, 0x80000000ull, 0xffffffffull, 1ull << 32, 1ull << 40,
		0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull,
	};
	uint64_t x = fz_next();
	size_t n = *len, at = n ? (size_t)(fz_next() % n) : 0, k;

	switch (x % 9) {
	case 0:                                          /* flip one bit */
		if (n)
			buf[at] ^= (uint8_t)(1u << ((x >> 8) % 8));
		break;
	case 1:                                          /* random byte */
		if (n)
			buf[at] = (uint8_t)(x >> 16);
		break;
	case 2: {                                        /* interesting value, 1/2/4/8 bytes */
		uint64_t v = interesting[(x >> 8) % (sizeof(interesting) / sizeof(interesting[0]))];
		size_t w = (size_t)1 << ((x >> 20) % 4);

		at &= ~(w - 1);
		if (at + w <= n)
			memcpy(buf + at, &v, w);
		break;
	}
	case 3:                                          /* insert random bytes */
		k = 1 + (size_t)((x >> 8) % 16);
		if (n + k <= FZ_INPUT_MAX) {
			memmove(buf + at + k, buf + at, n - at);
			for (size_t i = 0; i < k; i++)
				buf[at + i] = (uint8_t)fz_next();
			*len = n + k;
		}
		break;
	case 4:                                          /* delete a range */
		k = 1 + (size_t)((x >> 8) % 64);
		if (at + k <= n) {
			memmove(buf + at, buf + at + k, n - at - k);
			*len = n - k;
		}
		break;
	case 5: {                                        /* copy a range elsewhere */
		size_t from = n ? (size_t)(fz_next() % n) : 0;

		k = 1 + (size_t)((x >> 8) % 64);
		if (from + k <= n && at + k <= n)
			memmove(buf + at, buf + from, k);
		break;
	}
	case 6:                                          /* truncate */
		if (n > 2)
			*len = 2 + at % (n - 2);
		break;
	case 7:                                          /* a control byte */
		if (n >= 2)
			buf[(x >> 8) & 1] = (uint8_t)(x >> 16);
		break;
	default:                                         /* one bit of a control byte */
		if (n >= 2)
			buf[(x >> 8) & 1] ^= (uint8_t)(1u << ((x >> 16) % 8));
		break;
	}
}

int main(int argc, char **argv)
{
	unsigned long rounds = 2000, i;
	uint8_t *buf = malloc(FZ_INPUT_MAX);
	int a = 1;

#ifdef FUZZ_MAIN_HOOK
	{
		int hook = FUZZ_MAIN_HOOK(argc, argv);

		if (hook >= 0) {
			free(buf);
			return hook;
		}
	}
#endif
	if (buf == NULL)
		abort();
	signal(SIGABRT, fz_on_fault);
	signal(SIGSEGV, fz_on_fault);
	signal(SIGBUS, fz_on_fault);
	signal(SIGALRM, fz_on_alarm);
	if (a < argc && argv[a][0] >= '0' && argv[a][0] <= '9')
		rounds = strtoul(argv[a++], NULL, 10);
	if (a == argc) {
		fprintf(stderr, "usage: %s [rounds] corpus-file-or-dir...\n", argv[0]);
		return 2;
	}
	for (; a < argc; a++)
		fz_seed_add(argv[a]);
	if (fz_nseeds == 0)
		rounds = 0;        /* an empty directory: nothing to run, nothing to mutate */
	for (size_t s = 0; s < fz_nseeds; s++)
		fz_run(fz_seeds[s].p, fz_seeds[s].n);
	for (i = 0; i < rounds; i++) {
		const struct fz_seed *s = &fz_seeds[fz_next() % fz_nseeds];
		size_t len = s->n, edits = 1 + (size_t)(fz_next() % 8), k;

		memcpy(buf, s->p, len);
		for (k = 0; k < edits; k++)
			fz_mutate_once(buf, &len);
		fz_run(buf, len);
	}
	printf("%s: %zu corpus inputs and %lu mutations, every promise held\n",
	       argv[0], fz_nseeds, rounds);
	for (size_t s = 0; s < fz_nseeds; s++)
		free(fz_seeds[s].p);
	free(fz_seeds);
	free(buf);
	return 0;
}

#endif /* FLASH_FUZZ_MAIN_H */
