/*
 * test_api_segment.c -- segments and handles: create, destroy, attach
 * validation (each header field its own code), permissions, read-only
 * handles, the process table, fork rules, result-code names.
 *
 * Attach corruption is done on the object under /dev/shm with pwrite(2), at
 * offsets taken with offsetof() from the engine's own header struct.
 */
#include "helpers.h"
#include "unpriv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"   /* the engine's header layout: struct fs_hdr_fixed */

#if defined(__SANITIZE_ADDRESS__)
#define T_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_ASAN 1
#endif
#endif

/* Run fn in a forked child; return its exit status (or 128+signal). */
static int run_child(int (*fn)(void *), void *arg)
{
	pid_t pid;
	int st = 0;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn(arg));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

static void add_catalog(flash_t *h)
{
	assert_int_equal(t_activity(h, 1, 1, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 100, 1), FLASH_OK);
}

/* ---- create / destroy / names ------------------------------------------ */

static void test_create_open_gives_writable_handle_in_one_slot(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	flash_t *h2 = NULL;
	struct flash_stats st;

	assert_true(flash_slot(h) >= 0);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.procs, 1);
	assert_int_equal(st.procs_cap, 8);
	assert_int_equal(st.orders_cap, 1024);
	assert_int_equal(flash_open(name, 0, &h2), FLASH_OK);
	assert_int_not_equal(flash_slot(h2), flash_slot(h));
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.procs, 2);
	assert_int_equal(flash_close(h2), FLASH_OK);
	assert_int_equal(flash_stats_get(h, &st), FLASH_OK);
	assert_int_equal(st.procs, 1);
}

static void test_create_name_collision_fails_eexist_and_keeps_the_old_segment(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	flash_t *h2 = NULL;
	struct flash_sku_info si;

	add_catalog(h);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_EEXIST);
	/* the old object is untouched: a new handle still sees its catalog */
	assert_int_equal(flash_open(name, 0, &h2), FLASH_OK);
	assert_int_equal(flash_sku_get(h2, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.total, 100);
	assert_int_equal(si.available, 100);
	assert_int_equal(flash_close(h2), FLASH_OK);
}

static void test_open_of_missing_segment_fails_enoseg(void **state)
{
	char name[64];
	flash_t *h = (flash_t *)0x1;

	t_segname(name, sizeof name);
	assert_int_equal(flash_open(name, 0, &h), FLASH_ENOSEG);
	assert_ptr_equal(h, (flash_t *)0x1);   /* out written only on success */
	assert_int_equal(flash_open(name, FLASH_RDONLY, &h), FLASH_ENOSEG);
	assert_int_equal(flash_seg_destroy(name), FLASH_ENOSEG);
}

static void test_destroy_removes_name_but_open_handle_keeps_working(void **state)
{
	char name[64], path[128];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	flash_t *h2 = NULL;

	add_catalog(h);
	assert_int_equal(flash_seg_destroy(name), FLASH_OK);
	t_shm_path(name, path, sizeof path);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(flash_open(name, 0, &h2), FLASH_ENOSEG);
	assert_int_equal(flash_seg_destroy(name), FLASH_ENOSEG);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 99);
}

/*
 * flash_seg_destroy_checked: refused (FLASH_EBUSY, the name kept) while a
 * handle is attached and while records wait in a ring; FORCE goes on,
 * reports what it gave up, and the attached handle's next write answers
 * FLASH_EDESTROYED, changing nothing (its reads still answer).
 */
static void test_destroy_checked_refuses_attached_and_undrained_then_force_marks_the_handle(void **state)
{
	char name[64], path[128];
	struct flash_destroy_report r;
	flash_t *h = t_seg_new(NULL, name, sizeof name);

	(void)state;
	add_catalog(h);                              /* an ACTIVITY and a SKU record */
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_OK);
	t_shm_path(name, path, sizeof path);

	assert_int_equal(flash_seg_destroy_checked(name, 0, &r), FLASH_EBUSY);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(r.consumer_pid, 0);
	assert_int_equal(r.attached, 1);
	assert_int_equal(r.undrained, 3);
	assert_int_equal(r.n_slots, 1);
	assert_int_equal(r.slots[0].slot, (uint32_t)flash_slot(h));
	assert_int_equal(r.slots[0].pid, getpid());
	assert_int_equal(r.slots[0].alive, 1);
	assert_int_equal(r.slots[0].records, 3);
	assert_int_equal(r.marked, 0);
	assert_int_equal(t_order(h, 1, 10, 8, 1, 0, 0, NULL), FLASH_OK);   /* refused: nothing changed */

	assert_int_equal(flash_seg_destroy_checked(name, FLASH_DESTROY_FORCE, &r), FLASH_OK);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(r.attached, 1);
	assert_int_equal(r.undrained, 4);
	assert_int_equal(r.in_flight, 0);
	assert_int_equal(r.marked, 1);
	assert_int_equal(r.unlinked, 1);
	assert_int_equal(t_order(h, 1, 10, 9, 1, 0, 0, NULL), FLASH_EDESTROYED);
	assert_int_equal(flash_restock(h, 1, 10, 5), FLASH_EDESTROYED);
	assert_int_equal(t_available(h, 1, 10), 98);    /* reads answer; nothing taken */
	assert_int_equal(flash_seg_destroy_checked(name, 0, &r), FLASH_ENOSEG);
}

/*
 * KEEP_NAME closes the segment and keeps its name: a new handle attaches,
 * its orders are refused, but as the consumer it drains what the rings hold
 * (the records reach a consumer: none lost).  Then the segment is empty and
 * unattached, and a plain checked destroy removes it.  Bad flags: EINVAL.
 */
static void test_destroy_checked_keep_name_lets_the_consumer_drain_then_destroys(void **state)
{
	char name[64], path[128];
	struct flash_destroy_report r;
	struct t_recs recs = { 0 };
	flash_t *h = t_seg_new(NULL, name, sizeof name), *c = NULL;
	uint32_t marked = 2;

	(void)state;
	add_catalog(h);
	assert_int_equal(t_order(h, 1, 10, 7, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_destroyed_get(h, &marked), FLASH_OK);
	assert_int_equal(marked, 0);
	t_untrack_handle(h);
	assert_int_equal(flash_close(h), FLASH_OK);
	t_shm_path(name, path, sizeof path);

	assert_int_equal(flash_seg_destroy_checked(name, FLASH_DESTROY_KEEP_NAME, &r), FLASH_EINVAL);
	assert_int_equal(flash_seg_destroy_checked(name, 0x4u, &r), FLASH_EINVAL);
	assert_int_equal(flash_seg_destroy_checked(name, 0, &r), FLASH_EBUSY);
	assert_int_equal(r.attached, 0);
	assert_int_equal(r.undrained, 3);
	assert_int_equal(r.slots[0].pid, 0);            /* its handle closed: the slot is free */
	assert_int_equal(flash_seg_destroy_checked(name, FLASH_DESTROY_FORCE | FLASH_DESTROY_KEEP_NAME, &r),
	                 FLASH_OK);
	assert_int_equal(r.marked, 1);
	assert_int_equal(r.unlinked, 0);
	assert_int_equal(access(path, F_OK), 0);

	assert_int_equal(flash_open(name, 0, &c), FLASH_OK);
	t_track_handle(c);
	marked = 2;
	assert_int_equal(flash_destroyed_get(c, &marked), FLASH_OK);
	assert_int_equal(marked, 1);
	assert_int_equal(flash_destroyed_get(c, NULL), FLASH_EINVAL);
	assert_int_equal(flash_destroyed_get(NULL, &marked), FLASH_EINVAL);
	assert_int_equal(t_order(c, 1, 10, 8, 1, 0, 0, NULL), FLASH_EDESTROYED);
	assert_int_equal(flash_consumer_claim(c, NULL), FLASH_OK);
	assert_int_equal(t_recs_drain(c, &recs), FLASH_OK);
	assert_int_equal(recs.n, 3);
	t_recs_free(&recs);
	assert_int_equal(flash_seg_destroy_checked(name, 0, &r), FLASH_EBUSY);   /* the daemon */
	assert_int_equal(r.consumer_pid, getpid());
	t_untrack_handle(c);
	assert_int_equal(flash_close(c), FLASH_OK);
	assert_int_equal(flash_seg_destroy_checked(name, 0, &r), FLASH_OK);
	assert_int_equal(r.undrained, 0);
	assert_int_equal(access(path, F_OK), -1);
}

/* A name that holds no segment one can check: refused with the attach code;
 * FORCE removes it unchecked and says so. */
static void test_destroy_checked_of_unreadable_object_needs_force(void **state)
{
	char name[64], path[128];
	struct flash_destroy_report r;
	int fd;

	(void)state;
	t_segname(name, sizeof name);
	t_shm_path(name, path, sizeof path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);   /* zeros: no magic */
	close(fd);
	assert_int_equal(flash_seg_destroy_checked(name, 0, &r), FLASH_EMAGIC);
	assert_int_equal(r.unreadable, FLASH_EMAGIC);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(flash_seg_destroy_checked(name, FLASH_DESTROY_FORCE, &r), FLASH_OK);
	assert_int_equal(r.unreadable, FLASH_EMAGIC);
	assert_int_equal(r.unlinked, 1);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_name_without_leading_slash_is_accepted(void **state)
{
	char name[64];
	flash_t *h = NULL;

	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name + 1, NULL), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &h), FLASH_OK);   /* same object */
	assert_int_equal(flash_close(h), FLASH_OK);
	assert_int_equal(flash_seg_destroy(name + 1), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &h), FLASH_ENOSEG);
}

static void test_bad_names_fail_einval_and_create_nothing(void **state)
{
	char long200[202], long201[203], slash201[204];
	const char *bad[] = { "", "/", "/a/b", "a/b", "//x", long201, slash201 };
	flash_t *h = NULL;

	memset(long200, 'n', 200);
	long200[200] = 0;
	memset(long201, 'n', 201);
	long201[201] = 0;
	slash201[0] = '/';
	memset(slash201 + 1, 'n', 201);
	slash201[202] = 0;

	assert_int_equal(flash_seg_create(NULL, NULL), FLASH_EINVAL);
	assert_int_equal(flash_open(NULL, 0, &h), FLASH_EINVAL);
	assert_int_equal(flash_seg_destroy(NULL), FLASH_EINVAL);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(flash_seg_create(bad[i], NULL), FLASH_EINVAL);
		assert_int_equal(flash_open(bad[i], 0, &h), FLASH_EINVAL);
		assert_int_equal(flash_seg_destroy(bad[i]), FLASH_EINVAL);
	}

	/* 200 characters is the documented maximum and works */
	long200[0] = 'a' + (char)(getpid() % 26);
	(void)shm_unlink(long200);
	assert_int_equal(flash_seg_create(long200, NULL), FLASH_OK);
	assert_int_equal(flash_open(long200, 0, &h), FLASH_OK);
	assert_int_equal(flash_close(h), FLASH_OK);
	assert_int_equal(flash_seg_destroy(long200), FLASH_OK);
}

static void test_bad_options_fail_einval_and_create_nothing(void **state)
{
	char name[64], path[128];
	struct flash_seg_opts o;
	uint32_t *caps[] = { &o.max_activities, &o.max_skus, &o.max_shards, &o.max_users,
	                     &o.max_tokens, &o.max_orders, &o.max_requests, &o.max_locks,
	                     &o.max_procs, &o.ring_records };
	const uint32_t bad_modes[] = { 0644, 0666, 0700, 0640, 0, 04600 };
	const uint32_t bad_rings[] = { 3, 1000, 0x80000001u };

	t_segname(name, sizeof name);
	t_shm_path(name, path, sizeof path);
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
		t_opts_small(&o);
		*caps[i] = 0;
		assert_int_equal(flash_seg_create(name, &o), FLASH_EINVAL);
		assert_int_equal(access(path, F_OK), -1);
	}
	for (size_t i = 0; i < sizeof bad_rings / sizeof bad_rings[0]; i++) {
		t_opts_small(&o);
		o.ring_records = bad_rings[i];
		assert_int_equal(flash_seg_create(name, &o), FLASH_EINVAL);
		assert_int_equal(access(path, F_OK), -1);
	}
	for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++) {
		t_opts_small(&o);
		o.mode = bad_modes[i];
		assert_int_equal(flash_seg_create(name, &o), FLASH_EINVAL);
		assert_int_equal(access(path, F_OK), -1);
	}
	t_opts_small(&o);
	o.durability = 2;
	assert_int_equal(flash_seg_create(name, &o), FLASH_EINVAL);
	assert_int_equal(access(path, F_OK), -1);
	/* capacities too large for any machine */
	t_opts_small(&o);
	o.max_orders = UINT32_MAX;
	o.max_users = UINT32_MAX;
	o.max_tokens = UINT32_MAX;
	assert_int_equal(flash_seg_create(name, &o), FLASH_EINVAL);
	assert_int_equal(access(path, F_OK), -1);
}

/* ---- permissions -------------------------------------------------------- */

static mode_t shm_mode(const char *name)
{
	char path[128];
	struct stat sb;

	t_shm_path(name, path, sizeof path);
	assert_int_equal(stat(path, &sb), 0);
	return sb.st_mode & 07777;
}

static void test_create_under_umask_0_gives_mode_exactly_0600(void **state)
{
	char name[64];
	mode_t old = umask(0);

	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_OK);
	umask(old);
	assert_int_equal(shm_mode(name), 0600);
}

static void test_create_0660_under_umask_077_gives_mode_exactly_0660(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h = NULL;
	mode_t old = umask(077);

	t_opts_small(&o);
	o.mode = 0660;
	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name, &o), FLASH_OK);
	umask(old);
	assert_int_equal(shm_mode(name), 0660);
	assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
	assert_int_equal(flash_close(h), FLASH_OK);
}

static int chmod_shm(const char *name, mode_t m)
{
	char path[128];

	t_shm_path(name, path, sizeof path);
	return chmod(path, m);
}

static void test_attach_refuses_wrong_mode_with_emode(void **state)
{
	char name[64];
	const mode_t bad[] = { 0644, 0666, 0640, 0604, 0700, 0400, 0602 };
	flash_t *h = NULL;

	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_OK);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(chmod_shm(name, bad[i]), 0);
		assert_int_equal(flash_open(name, 0, &h), FLASH_EMODE);
		assert_int_equal(flash_open(name, FLASH_RDONLY, &h), FLASH_EMODE);
	}
	/* 0660 is a valid mode, but not for a segment created 0600: widened */
	assert_int_equal(chmod_shm(name, 0660), 0);
	assert_int_equal(flash_open(name, 0, &h), FLASH_EMODE);
	assert_int_equal(chmod_shm(name, 0600), 0);
	assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
	assert_int_equal(flash_close(h), FLASH_OK);
}

/*
 * A FIFO, a directory or a symlink planted under a segment's name: attach
 * answers FLASH_ENOTREG at once (a FIFO opened without O_NONBLOCK would wait
 * for a writer forever), read-only and writable, and leaves it as it was;
 * create refuses the taken name.
 */
static void test_attach_refuses_non_regular_files_with_enotreg_at_once(void **state)
{
	char name[64], path[128], other[128];
	flash_t *h = NULL;
	struct stat st;

	(void)state;
	alarm(30);   /* a blocking open fails the test instead of hanging it */
	t_segname(name, sizeof name);
	t_shm_path(name, path, sizeof path);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &h), FLASH_ENOTREG);
	assert_int_equal(flash_open(name, 0, &h), FLASH_ENOTREG);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_EEXIST);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(unlink(path), 0);

	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &h), FLASH_ENOTREG);
	assert_int_equal(flash_open(name, 0, &h), FLASH_ENOTREG);
	assert_int_equal(rmdir(path), 0);

	/* a symlink to a real segment: shm_open does not follow it */
	flash_t *real = t_seg_new(NULL, other, sizeof other);
	char target[160];
	t_shm_path(other, target, sizeof target);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &h), FLASH_ENOTREG);
	assert_int_equal(flash_open(name, 0, &h), FLASH_ENOTREG);
	assert_int_equal(unlink(path), 0);
	(void)real;
	alarm(0);
}

/*
 * Owner and OS refusals, as the fixture's unprivileged users (tests/common/unpriv.h):
 * A creates, B (another user) attaches.  Each child returns 0, or the number
 * of its first step that gave the wrong answer.
 */
struct perm_arg {
	const char *name;
	mode_t mode;            /* chmod to this after creating (0: keep 0600) */
};

static int child_create_0600(void *arg)
{
	struct perm_arg *pa = arg;
	char path[128];

	if (flash_seg_create(pa->name, NULL) != FLASH_OK)
		return 1;
	t_shm_path(pa->name, path, sizeof path);
	if (pa->mode != 0 && chmod(path, pa->mode) != 0)
		return 2;
	return 0;
}

static int child_open_ok(void *arg)
{
	struct perm_arg *pa = arg;
	flash_t *h = NULL;

	if (flash_open(pa->name, 0, &h) != FLASH_OK)
		return 1;
	return flash_close(h) == FLASH_OK ? 0 : 2;
}

static int child_open_eowner(void *arg)
{
	struct perm_arg *pa = arg;
	flash_t *h = NULL;

	if (flash_open(pa->name, 0, &h) != FLASH_EOWNER)
		return 1;
	if (flash_open(pa->name, FLASH_RDONLY, &h) != FLASH_EOWNER)
		return 2;
	return h == NULL ? 0 : 3;
}

static int child_open_eperm(void *arg)
{
	struct perm_arg *pa = arg;
	flash_t *h = NULL;

	if (flash_open(pa->name, 0, &h) != FLASH_EPERM)
		return 1;
	if (flash_open(pa->name, FLASH_RDONLY, &h) != FLASH_EPERM)
		return 2;
	if (flash_seg_destroy(pa->name) != FLASH_EPERM)   /* /dev/shm is sticky: not ours */
		return 3;
	return h == NULL ? 0 : 4;
}

static void test_attach_refuses_other_owner_with_eowner_before_mode(void **state)
{
	char name[64], path[128];
	struct perm_arg pa = { name, 0666 };

	t_segname(name, sizeof name);
	t_shm_path(name, path, sizeof path);
	/* A's segment, world-writable: the OS lets B open it, flashstock
	 * names the foreign owner first (not the wrong mode) */
	assert_int_equal(t_run_as(T_USER_A, child_create_0600, &pa), 0);
	assert_int_equal(t_run_as(T_USER_B, child_open_eowner, &pa), 0);
	/* root is a foreign owner too */
	{
		flash_t *h = NULL;

		assert_int_equal(flash_open(name, 0, &h), FLASH_EOWNER);
	}
	/* back to A's mode: A attaches again */
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(t_run_as(T_USER_A, child_open_ok, &pa), 0);
}

static void test_os_refusal_gives_eperm_and_keeps_the_segment(void **state)
{
	char name[64];
	struct perm_arg pa = { name, 0 };

	t_segname(name, sizeof name);
	assert_int_equal(t_run_as(T_USER_A, child_create_0600, &pa), 0);
	assert_int_equal(t_run_as(T_USER_B, child_open_eperm, &pa), 0);
	assert_int_equal(t_run_as(T_USER_A, child_open_ok, &pa), 0);
}

/* ---- size and header corruption ---------------------------------------- */

static int shm_fd(const char *name)
{
	char path[128];
	int fd;

	t_shm_path(name, path, sizeof path);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	return fd;
}

static off_t shm_size(const char *name)
{
	char path[128];
	struct stat sb;

	t_shm_path(name, path, sizeof path);
	assert_int_equal(stat(path, &sb), 0);
	return sb.st_size;
}

static void test_attach_refuses_wrong_size_with_esize(void **state)
{
	char name[64];
	flash_t *h = NULL;
	off_t size;
	int fd;

	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_OK);
	size = shm_size(name);
	assert_true(size >= (off_t)sizeof(struct fs_hdr));
	fd = shm_fd(name);
	/* larger than the header says */
	assert_int_equal(ftruncate(fd, size + 4096), 0);
	assert_int_equal(flash_open(name, 0, &h), FLASH_ESIZE);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &h), FLASH_ESIZE);
	/* smaller than the header says (header itself intact) */
	assert_int_equal(ftruncate(fd, size - 4096), 0);
	assert_int_equal(flash_open(name, 0, &h), FLASH_ESIZE);
	/* smaller than a header */
	assert_int_equal(ftruncate(fd, (off_t)sizeof(struct fs_hdr) - 1), 0);
	assert_int_equal(flash_open(name, 0, &h), FLASH_ESIZE);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(flash_open(name, 0, &h), FLASH_ESIZE);
	close(fd);
}

/* Flip one byte of the header at @p off (xor 0xff). */
static void flip_byte(const char *name, size_t off)
{
	int fd = shm_fd(name);
	unsigned char c;

	assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
	c ^= 0xff;
	assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
	close(fd);
}

static void read_hdr(const char *name, struct fs_hdr_fixed *hd)
{
	int fd = shm_fd(name);

	assert_int_equal(pread(fd, hd, sizeof *hd, 0), (ssize_t)sizeof *hd);
	close(fd);
}

static void write_hdr(const char *name, const struct fs_hdr_fixed *hd)
{
	int fd = shm_fd(name);

	assert_int_equal(pwrite(fd, hd, sizeof *hd, 0), (ssize_t)sizeof *hd);
	close(fd);
}

/* Recompute the header checksum with the engine's own function, so that a
 * test can reach the checks made after the checksum. */
static void seal(struct fs_hdr_fixed *hd)
{
	hd->checksum = fs_fnv(hd, offsetof(struct fs_hdr_fixed, checksum));
}

static void expect_open(const char *name, int rc)
{
	flash_t *h = NULL;

	assert_int_equal(flash_open(name, 0, &h), rc);
	if (rc == FLASH_OK)
		assert_int_equal(flash_close(h), FLASH_OK);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &h), rc);
	if (rc == FLASH_OK)
		assert_int_equal(flash_close(h), FLASH_OK);
}

static void test_attach_refuses_each_corrupt_magic_byte_with_emagic(void **state)
{
	char name[64];

	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_OK);
	for (size_t i = 0; i < sizeof(((struct fs_hdr_fixed *)0)->magic); i++) {
		size_t off = offsetof(struct fs_hdr_fixed, magic) + i;

		flip_byte(name, off);
		expect_open(name, FLASH_EMAGIC);
		flip_byte(name, off);
		expect_open(name, FLASH_OK);
	}
	/* magic is checked before version: both wrong gives EMAGIC */
	flip_byte(name, offsetof(struct fs_hdr_fixed, magic));
	flip_byte(name, offsetof(struct fs_hdr_fixed, version));
	expect_open(name, FLASH_EMAGIC);
}

static void test_attach_refuses_other_layout_version_with_eversion(void **state)
{
	char name[64];
	size_t vsz = sizeof(((struct fs_hdr_fixed *)0)->version);

	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_OK);
	for (size_t i = 0; i < vsz; i++) {
		size_t off = offsetof(struct fs_hdr_fixed, version) + i;

		flip_byte(name, off);
		expect_open(name, FLASH_EVERSION);
		flip_byte(name, off);
		expect_open(name, FLASH_OK);
	}
	/* version is checked before the checksum: version and a covered byte wrong */
	flip_byte(name, offsetof(struct fs_hdr_fixed, version));
	flip_byte(name, offsetof(struct fs_hdr_fixed, seg_size));
	expect_open(name, FLASH_EVERSION);
}

static void test_attach_refuses_header_checksum_mismatch_with_echecksum(void **state)
{
	char name[64];
	struct fs_hdr_fixed hd;
	const size_t fields[] = {
		offsetof(struct fs_hdr_fixed, hdr_size),
		offsetof(struct fs_hdr_fixed, seg_size),
		offsetof(struct fs_hdr_fixed, uid),
		offsetof(struct fs_hdr_fixed, mode),
		offsetof(struct fs_hdr_fixed, opts) + offsetof(struct flash_seg_opts, max_orders),
		offsetof(struct fs_hdr_fixed, token_key),
		offsetof(struct fs_hdr_fixed, token_key) + 15,
		offsetof(struct fs_hdr_fixed, created_ns) + 7,
		offsetof(struct fs_hdr_fixed, region),
		offsetof(struct fs_hdr_fixed, region) + sizeof(hd.region) - 1,
		offsetof(struct fs_hdr_fixed, checksum),
	};

	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_OK);
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		flip_byte(name, fields[i]);
		expect_open(name, FLASH_ECHECKSUM);
		flip_byte(name, fields[i]);
		expect_open(name, FLASH_OK);
	}
}

static void test_attach_refuses_header_size_field_with_esize(void **state)
{
	char name[64];
	struct fs_hdr_fixed hd;

	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_OK);
	read_hdr(name, &hd);
	hd.seg_size += 4096;
	seal(&hd);
	write_hdr(name, &hd);
	expect_open(name, FLASH_ESIZE);
}

static void test_attach_refuses_region_table_out_of_bounds_with_elayout(void **state)
{
	char name[64];
	struct fs_hdr_fixed good, hd;
	uint32_t n;

	t_segname(name, sizeof name);
	assert_int_equal(flash_seg_create(name, NULL), FLASH_OK);
	read_hdr(name, &good);
	n = (uint32_t)(sizeof good.region / sizeof good.region[0]);
	assert_true(n >= 2);
	for (uint32_t i = 0; i < n; i++) {
		if (good.region[i].size == 0)
			continue;
		/* past the end */
		hd = good;
		hd.region[i].off = good.seg_size;
		seal(&hd);
		write_hdr(name, &hd);
		expect_open(name, FLASH_ELAYOUT);
		/* length runs past the end */
		hd = good;
		hd.region[i].size = good.seg_size;
		seal(&hd);
		write_hdr(name, &hd);
		expect_open(name, FLASH_ELAYOUT);
		/* offset + length wraps around */
		hd = good;
		hd.region[i].size =
			(__typeof__(hd.region[i].size))0 - 64;
		seal(&hd);
		write_hdr(name, &hd);
		expect_open(name, FLASH_ELAYOUT);
		/* more elements than the region holds */
		if (good.region[i].elem_size != 0) {
			hd = good;
			hd.region[i].count = (uint32_t)(good.region[i].size / good.region[i].elem_size) + 1;
			seal(&hd);
			write_hdr(name, &hd);
			expect_open(name, FLASH_ELAYOUT);
		}
		/* overlapping the header */
		hd = good;
		hd.region[i].off = 0;
		seal(&hd);
		write_hdr(name, &hd);
		expect_open(name, FLASH_ELAYOUT);
	}
	/* two regions overlapping each other */
	for (uint32_t i = 0; i + 1 < n; i++) {
		if (good.region[i].size == 0 ||
		    good.region[i + 1].size == 0)
			continue;
		hd = good;
		hd.region[i + 1].off =
			good.region[i].off;
		seal(&hd);
		write_hdr(name, &hd);
		expect_open(name, FLASH_ELAYOUT);
	}
	/* the sealed original opens again: the codes above came from the edits */
	write_hdr(name, &good);
	expect_open(name, FLASH_OK);
}

/* ---- open flags, read-only handles ------------------------------------- */

static void test_open_bad_arguments_fail_einval(void **state)
{
	char name[64];
	flash_t *h = NULL;
	struct t_snap before;
	flash_t *main_h = t_seg_new(NULL, name, sizeof name);

	t_snap_take(main_h, &before);
	assert_int_equal(flash_open(name, 0, NULL), FLASH_EINVAL);
	assert_int_equal(flash_open(name, 0x2, &h), FLASH_EINVAL);
	assert_int_equal(flash_open(name, 0x80000000u, &h), FLASH_EINVAL);
	assert_int_equal(flash_open(name, FLASH_RDONLY | 0x4, &h), FLASH_EINVAL);
	T_ASSERT_UNCHANGED(main_h, &before, 0);
	assert_int_equal(flash_close(NULL), FLASH_EINVAL);
}

static int drain_nothing(void *arg, const struct flash_record *rec, uint64_t seq)
{
	return 0;
}

static void test_read_only_handle_refuses_every_write_with_ereadonly(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	flash_t *ro = NULL;
	struct t_snap before;
	struct flash_activity a = { .id = 2, .limit_per_user = 1, .max_qty = 1,
	                            .start_ns = 1, .end_ns = INT64_MAX };
	struct flash_order_req r = { .activity_id = 1, .sku_id = 10, .user_id = 5, .qty = 1 };
	struct flash_sku_info si;
	struct flash_stats st;
	struct flash_record rec;
	uint64_t tok = 0, fence = 0;
	uint32_t n = 0, units = 0;

	add_catalog(h);
	assert_int_equal(t_order(h, 1, 10, 99, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_lock_acquire(h, "l", 1, 60000, &fence), FLASH_OK);
	assert_int_equal(flash_open(name, FLASH_RDONLY, &ro), FLASH_OK);
	t_track_handle(ro);
	t_snap_take(h, &before);
	assert_int_equal(before.st.procs, 1);   /* a read-only handle takes no slot */

	memset(&rec, 0, sizeof rec);
	rec.type = FLASH_REC_RESTOCK;
	rec.activity_id = 1;
	rec.sku_id = 10;
	rec.value = 5;
	assert_int_equal(flash_activity_add(ro, &a), FLASH_EREADONLY);
	assert_int_equal(flash_sku_add(ro, 1, 11, 5, 1), FLASH_EREADONLY);
	assert_int_equal(flash_order(ro, &r, NULL), FLASH_EREADONLY);
	assert_int_equal(flash_cancel(ro, 1, &units), FLASH_EREADONLY);
	assert_int_equal(flash_restock(ro, 1, 10, 5), FLASH_EREADONLY);
	assert_int_equal(flash_token_issue(ro, 1, 10, 5, 1000, &tok), FLASH_EREADONLY);
	assert_int_equal(flash_token_redeem(ro, 1, 10, 5, 12345), FLASH_EREADONLY);
	assert_int_equal(flash_lock_acquire(ro, "m", 1, 1000, &fence), FLASH_EREADONLY);
	assert_int_equal(flash_lock_renew(ro, "l", 1, 1000), FLASH_EREADONLY);
	assert_int_equal(flash_lock_release(ro, "l", 1), FLASH_EREADONLY);
	assert_int_equal(flash_recover(ro, &n), FLASH_EREADONLY);
	assert_int_equal(flash_ring_drain(ro, drain_nothing, NULL, 100, &n), FLASH_EREADONLY);
	assert_int_equal(flash_durable_advance(ro, 0, 1), FLASH_EREADONLY);
	assert_int_equal(flash_durability_fail(ro), FLASH_EREADONLY);
	assert_int_equal(flash_replay(ro, &rec), FLASH_EREADONLY);
	T_ASSERT_UNCHANGED(h, &before, 0);
	assert_int_equal(tok, 0);
	/* the order and lock are still the writer's */
	assert_int_equal(flash_lock_renew(h, "l", 1, 60000), FLASH_OK);

	/* reads work on a read-only handle and see the writer's changes */
	assert_int_equal(flash_sku_get(ro, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.available, 99);
	assert_int_equal(flash_stats_get(ro, &st), FLASH_OK);
	assert_int_equal(st.orders, 1);
	assert_true(flash_orders_max(ro) >= 1);
	assert_int_equal(flash_orders_max(ro), flash_orders_max(h));
	assert_int_equal(t_order(h, 1, 10, 98, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_sku_get(ro, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.available, 98);
}

static void test_process_table_full_gives_enoproc_until_a_handle_closes(void **state)
{
	char name[64];
	struct flash_seg_opts o;
	flash_t *h, *h2 = NULL, *h3 = NULL, *ro = NULL;
	struct t_snap before;

	t_opts_small(&o);
	o.max_procs = 2;
	h = t_seg_new(&o, name, sizeof name);
	assert_int_equal(flash_open(name, 0, &h2), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(before.st.procs, 2);
	h3 = (flash_t *)0x1;
	assert_int_equal(flash_open(name, 0, &h3), FLASH_ENOPROC);
	assert_ptr_equal(h3, (flash_t *)0x1);
	assert_int_equal(flash_open(name, 0, &h3), FLASH_ENOPROC);
	T_ASSERT_UNCHANGED(h, &before, 0);
	/* a monitor needs no slot */
	assert_int_equal(flash_open(name, FLASH_RDONLY, &ro), FLASH_OK);
	assert_int_equal(flash_close(ro), FLASH_OK);
	/* a slot freed by close is reusable */
	assert_int_equal(flash_close(h2), FLASH_OK);
	assert_int_equal(flash_open(name, 0, &h3), FLASH_OK);
	assert_int_equal(flash_close(h3), FLASH_OK);
}

/* ---- fork rule ---------------------------------------------------------- */

struct fork_arg {
	flash_t *h;
};

static int child_uses_parent_handle(void *arg)
{
	flash_t *h = ((struct fork_arg *)arg)->h;
	struct flash_activity a = { .id = 2, .limit_per_user = 1, .max_qty = 1,
	                            .start_ns = 1, .end_ns = INT64_MAX };
	struct flash_order_req r = { .activity_id = 1, .sku_id = 10, .user_id = 5, .qty = 1 };
	struct flash_record rec;
	uint64_t tok = 0, fence = 0;
	uint32_t n = 0, units = 0;
	int fails = 0;

	memset(&rec, 0, sizeof rec);
	rec.type = FLASH_REC_RESTOCK;
	rec.activity_id = 1;
	rec.sku_id = 10;
	rec.value = 5;
#define EXPECT_EFORK(call) do { if ((call) != FLASH_EFORK) { \
		fprintf(stderr, "child: %s did not give FLASH_EFORK\n", #call); fails++; } } while (0)
	EXPECT_EFORK(flash_activity_add(h, &a));
	EXPECT_EFORK(flash_sku_add(h, 1, 11, 5, 1));
	EXPECT_EFORK(flash_order(h, &r, NULL));
	EXPECT_EFORK(flash_cancel(h, 1, &units));
	EXPECT_EFORK(flash_restock(h, 1, 10, 5));
	EXPECT_EFORK(flash_token_issue(h, 1, 10, 5, 1000, &tok));
	EXPECT_EFORK(flash_token_redeem(h, 1, 10, 5, 1));
	EXPECT_EFORK(flash_lock_acquire(h, "m", 1, 1000, &fence));
	EXPECT_EFORK(flash_lock_renew(h, "l", 1, 1000));
	EXPECT_EFORK(flash_lock_release(h, "l", 1));
	EXPECT_EFORK(flash_recover(h, &n));
	EXPECT_EFORK(flash_ring_drain(h, drain_nothing, NULL, 100, &n));
	EXPECT_EFORK(flash_close(h));
#undef EXPECT_EFORK
	return fails;
}

static void test_handle_used_in_forked_child_gives_efork_and_changes_nothing(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct fork_arg fa = { h };
	struct t_snap before;
	uint64_t fence = 0;

	add_catalog(h);
	assert_int_equal(t_order(h, 1, 10, 99, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_lock_acquire(h, "l", 1, 60000, &fence), FLASH_OK);
	t_snap_take(h, &before);
	assert_int_equal(run_child(child_uses_parent_handle, &fa), 0);
	T_ASSERT_UNCHANGED(h, &before, 0);
	/* the child's close left the parent's slot alone: the parent goes on */
	assert_int_equal(t_order(h, 1, 10, 98, 1, 0, 0, NULL), FLASH_OK);
	assert_int_equal(flash_lock_release(h, "l", 1), FLASH_OK);
	assert_int_equal(t_available(h, 1, 10), 98);
}

/* ---- system failures ---------------------------------------------------- */

static int child_without_fds(void *arg)
{
	const char *name = arg;
	struct rlimit rl;
	flash_t *h = NULL;
	char other[64];
	int fd = dup(0);

	if (fd < 0)
		return 90;
	close(fd);
	/* no descriptor can be opened any more: shm_open fails with EMFILE */
	rl.rlim_cur = rl.rlim_max = (rlim_t)fd;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 91;
	if (flash_open(name, 0, &h) != FLASH_ESYS)
		return 1;
	snprintf(other, sizeof other, "%s-x", name);
	if (flash_seg_create(other, NULL) != FLASH_ESYS)
		return 2;
	return 0;
}

static void test_descriptor_exhaustion_gives_esys(void **state)
{
	char name[64], path[128];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct t_snap before;

	t_snap_take(h, &before);
	assert_int_equal(run_child(child_without_fds, name), 0);
	T_ASSERT_UNCHANGED(h, &before, 0);
	snprintf(path, sizeof path, "/dev/shm/%s-x", name + 1);
	assert_int_equal(access(path, F_OK), -1);
}

static int child_without_address_space(void *arg)
{
	const char *name = arg;
	struct rlimit rl;
	struct flash_seg_opts o;
	long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld", &pages) != 1)
		return 90;
	fclose(f);
	/* room for 16 MiB more: the default segment (hundreds of MiB) cannot map */
	rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (16u << 20);
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		return 91;
	flash_seg_opts_default(&o);
	if (flash_seg_create(name, &o) != FLASH_ENOMEM)
		return 1;
	return 0;
}

static void test_segment_too_large_to_map_gives_enomem_and_creates_nothing(void **state)
{
	char name[64], path[128];
	struct flash_seg_opts o;

#ifdef T_ASAN
	skip();   /* the sanitizer's shadow memory needs an unlimited address space */
#endif
	flash_seg_opts_default(&o);
	t_segname(name, sizeof name);
	assert_int_equal(run_child(child_without_address_space, name), 0);
	t_shm_path(name, path, sizeof path);
	assert_int_equal(access(path, F_OK), -1);
}

/* ---- result codes ------------------------------------------------------- */

/* ---- huge pages --------------------------------------------------------- */

#define T_HUGE (2ul << 20)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* The mapping of /dev/shm<name> in this process: its start and size, and the
 * kB of it mapped 2 MiB at a time (smaps' ShmemPmdMapped). */
static void t_shm_vma(const char *name, uintptr_t *start, uint64_t *size, uint64_t *pmd_kb)
{
	char path[300], line[512];
	int in = 0, found = 0;
	FILE *f;

	t_shm_path(name, path, sizeof path);
	f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi;
		char *pos = strchr(line, '/');
		unsigned long long kb;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {   /* a mapping's first line */
			size_t n = strlen(path);

			in = pos != NULL && strncmp(pos, path, n) == 0 && (pos[n] == '\n' || pos[n] == ' ');
			if (in) {
				found++;
				*start = lo;
				*size = hi - lo;
			}
		} else if (in && sscanf(line, "ShmemPmdMapped: %llu kB", &kb) == 1) {
			*pmd_kb = kb;
		}
	}
	fclose(f);
	assert_int_equal(found, 1);   /* one mapping per process and object */
}

/* Can this kernel make 2 MiB folios of a /dev/shm object (MADV_COLLAPSE,
 * Linux 6.1, not shmem_enabled=deny, a huge page free)?  Tried on an object
 * of its own; errno says why not. */
static int t_can_collapse(void)
{
	char name[64], path[300];
	char *r, *a;
	int fd, ok, e;

	t_segname(name, sizeof name);
	t_shm_path(name, path, sizeof path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(posix_fallocate(fd, 0, (off_t)T_HUGE), 0);
	r = mmap(NULL, 2 * T_HUGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(r != MAP_FAILED);
	a = (char *)(((uintptr_t)r + T_HUGE - 1) & ~(uintptr_t)(T_HUGE - 1));
	assert_true(mmap(a, T_HUGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == a);
	ok = madvise(a, T_HUGE, MADV_COLLAPSE) == 0;
	e = errno;
	munmap(r, 2 * T_HUGE);
	close(fd);
	unlink(path);
	errno = e;
	return ok;
}

static void test_writable_mapping_starts_at_2_mib_and_uses_huge_pages_where_the_kernel_can(void **state)
{
	struct flash_seg_opts o;
	struct flash_order_req rq;
	struct flash_order_res rs;
	char name[64];
	flash_t *h;
	uintptr_t start = 0;
	uint64_t size = 0, pmd_kb = 0;

	(void)state;
	t_opts_small(&o);
	o.max_orders = o.max_users = o.max_tokens = o.max_requests = 50000;
	h = t_seg_new(&o, name, sizeof name);
	t_shm_vma(name, &start, &size, &pmd_kb);
	assert_int_equal(start % T_HUGE, 0);
	assert_true(size >= 8 * T_HUGE);
	if (t_can_collapse()) {
		/* every whole 2 MiB of the object, mapped 2 MiB at a time */
		assert_int_equal(pmd_kb, (size & ~(uint64_t)(T_HUGE - 1)) / 1024);
	} else {
		/* the fallback: 4 KiB pages, the same segment */
		print_message("this kernel makes no huge folio here (%s): 4 KiB pages checked\n",
		              strerror(errno));
		assert_int_equal(pmd_kb, 0);
	}
	add_catalog(h);
	memset(&rq, 0, sizeof rq);
	rq.activity_id = 1;
	rq.sku_id = 10;
	rq.user_id = 7;
	rq.qty = 1;
	assert_int_equal(flash_order(h, &rq, &rs), FLASH_OK);
}

/* A windowed segment of 200,000 entries a table, and its writable handle. */
static flash_t *t_windowed_new(char *name, size_t len)
{
	struct flash_seg_opts o;
	struct flash_reclaim_opts ro;
	flash_t *h;

	t_opts_small(&o);
	o.max_orders = o.max_users = o.max_tokens = o.max_requests = 200000;
	h = t_seg_new(&o, name, len);
	memset(&ro, 0, sizeof ro);
	ro.req_window_s = 3600;
	ro.user_gen_s = 3600;
	assert_int_equal(flash_seg_reclaim_set(h, &ro), FLASH_OK);
	return h;
}

/* The one-bank tables a windowed segment gives back to tmpfs stay given back
 * after a writable attach, which faults in the whole mapping and makes the
 * rest of it huge (punch_unused runs after both). */
static void test_windowed_segment_keeps_its_unused_tables_out_of_memory_after_attach(void **state)
{
	struct fs_hdr_fixed fx;
	char name[64], path[300];
	flash_t *h2;
	struct stat st;
	uint64_t holes;
	int fd;

	(void)state;
	(void)t_windowed_new(name, sizeof name);   /* its handle stays open, tracked */
	assert_int_equal(flash_open(name, 0, &h2), FLASH_OK);
	t_track_handle(h2);
	t_shm_path(name, path, sizeof path);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &fx, sizeof fx, 0), (ssize_t)sizeof fx);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_true(fx.gen_banks > 1);
	holes = ((fx.region[FS_R_USER].size + 4095) & ~4095ull) +
	        ((fx.region[FS_R_REQ].size + 4095) & ~4095ull);
	assert_true(holes >= 4 * T_HUGE);
	assert_true((uint64_t)st.st_blocks * 512 <= fx.seg_size - holes);
}

/* The whole 2 MiB ranges of a windowed segment outside its two punched
 * one-bank tables, in kB: what can be mapped 2 MiB at a time. */
static uint64_t t_huge_kb_outside_holes(const struct fs_hdr_fixed *fx)
{
	const struct fs_region *u = &fx->region[FS_R_USER], *q = &fx->region[FS_R_REQ];
	const struct fs_region *holes[2] = { u->off <= q->off ? u : q, u->off <= q->off ? q : u };
	uint64_t lo = 0, kb = 0;

	for (int k = 0; k <= 2; k++) {
		uint64_t hi = k < 2 ? holes[k]->off : fx->seg_size;
		uint64_t a = (lo + T_HUGE - 1) & ~(uint64_t)(T_HUGE - 1), b = hi & ~(uint64_t)(T_HUGE - 1);

		if (b > a)
			kb += (b - a) / 1024;
		if (k < 2)
			lo = holes[k]->off + ((holes[k]->size + 4095) & ~4095ull);
	}
	return kb;
}

/* A windowed segment whose tables were punched out while it was on 4 KiB
 * pages (made before huge pages, or a collapse that found no free 2 MiB
 * block): MADV_COLLAPSE stops at the first range that holds no page, so
 * the attach collapses around the holes, not over them.  The 4 KiB state
 * is made here by moving the bank tables' bytes to fresh 4 KiB pages. */
static void test_windowed_segment_on_4_kib_pages_is_collapsed_around_its_holes(void **state)
{
	struct fs_hdr_fixed fx;
	char name[64], path[300];
	uintptr_t start = 0;
	uint64_t size = 0, pmd_kb = 0, off, len;
	flash_t *h;
	char *buf;
	int fd, can = t_can_collapse();

	(void)state;
	h = t_windowed_new(name, sizeof name);
	t_untrack_handle(h);
	assert_int_equal(flash_close(h), FLASH_OK);   /* the process maps it no more */

	t_shm_path(name, path, sizeof path);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &fx, sizeof fx, 0), (ssize_t)sizeof fx);
	assert_true(fx.gen_banks > 1);
	assert_true(fx.region[FS_R_USER_BANKS].off > fx.region[FS_R_USER].off &&
	            fx.region[FS_R_USER_BANKS].off > fx.region[FS_R_REQ].off);
	off = fx.region[FS_R_USER_BANKS].off & ~4095ull;
	len = (fx.region[FS_R_USER_BANKS].size + 4095) & ~4095ull;
	assert_true(len >= 4 * T_HUGE);
	buf = malloc(len);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	assert_int_equal(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len), 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);   /* 4 KiB pages again */
	free(buf);
	close(fd);

	assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
	t_track_handle(h);
	t_shm_vma(name, &start, &size, &pmd_kb);
	assert_int_equal(size, fx.seg_size);
	/* where the kernel makes no huge folio, the same attach on 4 KiB pages */
	assert_int_equal(pmd_kb, can ? t_huge_kb_outside_holes(&fx) : 0);
}

static void test_every_result_code_has_its_own_name_and_text(void **state)
{
	static const struct { int rc; const char *name; } codes[] = {
		{ FLASH_OK, "FLASH_OK" }, { FLASH_ESOLD_OUT, "FLASH_ESOLD_OUT" },
		{ FLASH_ELIMIT, "FLASH_ELIMIT" }, { FLASH_ENOT_STARTED, "FLASH_ENOT_STARTED" },
		{ FLASH_EENDED, "FLASH_EENDED" }, { FLASH_ENOT_FOUND, "FLASH_ENOT_FOUND" },
		{ FLASH_EBAD_TOKEN, "FLASH_EBAD_TOKEN" }, { FLASH_EDUPLICATE, "FLASH_EDUPLICATE" },
		{ FLASH_EFULL, "FLASH_EFULL" }, { FLASH_EINVAL, "FLASH_EINVAL" },
		{ FLASH_EDURABILITY, "FLASH_EDURABILITY" }, { FLASH_EEXIST, "FLASH_EEXIST" },
		{ FLASH_ENOSEG, "FLASH_ENOSEG" }, { FLASH_EOWNER, "FLASH_EOWNER" },
		{ FLASH_EMODE, "FLASH_EMODE" }, { FLASH_ESIZE, "FLASH_ESIZE" },
		{ FLASH_EMAGIC, "FLASH_EMAGIC" }, { FLASH_EVERSION, "FLASH_EVERSION" },
		{ FLASH_ECHECKSUM, "FLASH_ECHECKSUM" }, { FLASH_ELAYOUT, "FLASH_ELAYOUT" },
		{ FLASH_ECORRUPT, "FLASH_ECORRUPT" }, { FLASH_EREADONLY, "FLASH_EREADONLY" },
		{ FLASH_EFORK, "FLASH_EFORK" }, { FLASH_ECANCELLED, "FLASH_ECANCELLED" },
		{ FLASH_ELOCKED, "FLASH_ELOCKED" }, { FLASH_ENOT_OWNER, "FLASH_ENOT_OWNER" },
		{ FLASH_EBUSY, "FLASH_EBUSY" }, { FLASH_ENOPROC, "FLASH_ENOPROC" },
		{ FLASH_EPERM, "FLASH_EPERM" }, { FLASH_ENOMEM, "FLASH_ENOMEM" },
		{ FLASH_ESYS, "FLASH_ESYS" }, { FLASH_EWRONG_THREAD, "FLASH_EWRONG_THREAD" },
		{ FLASH_ENOTREG, "FLASH_ENOTREG" }, { FLASH_EFATE_UNKNOWN, "FLASH_EFATE_UNKNOWN" },
		{ FLASH_EREQ_EXPIRED, "FLASH_EREQ_EXPIRED" },
	};
	size_t n = sizeof codes / sizeof codes[0];

	assert_int_equal(n, 35);
	for (size_t i = 0; i < n; i++) {
		const char *text = flash_strerror(codes[i].rc);

		assert_int_equal(codes[i].rc, -(int)i);
		assert_string_equal(flash_rcname(codes[i].rc), codes[i].name);
		assert_non_null(text);
		assert_true(strlen(text) > 0);
		assert_string_not_equal(text, "unknown result code");
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(text, flash_strerror(codes[j].rc));
	}
	assert_string_equal(flash_strerror(-38), "unknown result code");
	assert_string_equal(flash_strerror(1), "unknown result code");
	assert_string_equal(flash_strerror(-1000000), "unknown result code");
	assert_string_equal(flash_rcname(-38), "FLASH_E?");
	assert_string_equal(flash_rcname(7), "FLASH_E?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)
		T(test_create_open_gives_writable_handle_in_one_slot),
		T(test_create_name_collision_fails_eexist_and_keeps_the_old_segment),
		T(test_open_of_missing_segment_fails_enoseg),
		T(test_destroy_removes_name_but_open_handle_keeps_working),
		T(test_destroy_checked_refuses_attached_and_undrained_then_force_marks_the_handle),
		T(test_destroy_checked_keep_name_lets_the_consumer_drain_then_destroys),
		T(test_destroy_checked_of_unreadable_object_needs_force),
		T(test_name_without_leading_slash_is_accepted),
		T(test_bad_names_fail_einval_and_create_nothing),
		T(test_bad_options_fail_einval_and_create_nothing),
		T(test_create_under_umask_0_gives_mode_exactly_0600),
		T(test_create_0660_under_umask_077_gives_mode_exactly_0660),
		T(test_attach_refuses_wrong_mode_with_emode),
		T(test_attach_refuses_other_owner_with_eowner_before_mode),
		T(test_attach_refuses_non_regular_files_with_enotreg_at_once),
		T(test_os_refusal_gives_eperm_and_keeps_the_segment),
		T(test_attach_refuses_wrong_size_with_esize),
		T(test_attach_refuses_each_corrupt_magic_byte_with_emagic),
		T(test_attach_refuses_other_layout_version_with_eversion),
		T(test_attach_refuses_header_checksum_mismatch_with_echecksum),
		T(test_attach_refuses_header_size_field_with_esize),
		T(test_attach_refuses_region_table_out_of_bounds_with_elayout),
		T(test_open_bad_arguments_fail_einval),
		T(test_read_only_handle_refuses_every_write_with_ereadonly),
		T(test_process_table_full_gives_enoproc_until_a_handle_closes),
		T(test_handle_used_in_forked_child_gives_efork_and_changes_nothing),
		T(test_descriptor_exhaustion_gives_esys),
		T(test_segment_too_large_to_map_gives_enomem_and_creates_nothing),
		T(test_writable_mapping_starts_at_2_mib_and_uses_huge_pages_where_the_kernel_can),
		T(test_windowed_segment_keeps_its_unused_tables_out_of_memory_after_attach),
		T(test_windowed_segment_on_4_kib_pages_is_collapsed_around_its_holes),
		T(test_every_result_code_has_its_own_name_and_text),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
