/*
 * test_perm_segment.c -- who may create and attach a segment (issue 4, item 5).
 *
 * What test_api_segment.c does not cover already: the exact mode under every
 * umask for both valid modes, the group of a 0660 segment, the owner being
 * the effective uid, each world-writable or widened mode refused on a
 * group segment too, a foreign owner set with fchown(2) on the descriptor,
 * and a name collision with an object flashstock did not make (it fails
 * FLASH_EEXIST and the object is left exactly as it was).
 *
 * Who may attach is tested as real unprivileged users: the ctest fixture
 * test_users_start (tests/fixtures/users.sh) creates users A and B, members
 * of one group, and C, a member of none, and removes them after; each check
 * runs in a child that has become one of them (tests/common/unpriv.c).  The tests
 * start as root (CI runs as root) and never skip: root is needed to create
 * the users, to give an object to a foreign group and to change an owner.
 */
#include "helpers.h"
#include "unpriv.h"

#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void shm_stat(const char *name, struct stat *sb)
{
	char path[128];

	t_shm_path(name, path, sizeof path);
	assert_int_equal(stat(path, sb), 0);
}

/* A group other than ours if one exists (nogroup), else ours. */
static gid_t other_gid(void)
{
	struct group *g = getgrnam("nogroup");

	return g ? g->gr_gid : getegid();
}

static void create_under(const char *name, mode_t mask, uint32_t mode, int64_t gid)
{
	struct flash_seg_opts o;
	mode_t old;

	t_opts_small(&o);
	o.mode = mode;
	o.gid = gid;
	old = umask(mask);
	assert_int_equal(flash_seg_create(name, &o), FLASH_OK);
	umask(old);
}

static void test_mode_0600_is_exact_under_every_umask_and_owner_is_euid(void **state)
{
	const mode_t masks[] = { 0, 022, 077, 0177, 0777 };

	for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
		char name[64];
		struct stat sb;
		flash_t *h = NULL;

		t_segname(name, sizeof name);
		create_under(name, masks[i], 0600, -1);
		shm_stat(name, &sb);
		assert_int_equal(sb.st_mode & 07777, 0600);
		assert_int_equal(sb.st_uid, geteuid());
		assert_int_equal(sb.st_gid, getegid());
		assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
		assert_int_equal(flash_close(h), FLASH_OK);
	}
}

static void test_mode_0660_with_a_group_is_exact_and_has_that_group(void **state)
{
	const mode_t masks[] = { 0, 007, 077, 0777 };
	const gid_t gids[] = { 0, other_gid() };

	/* giving an object to a group we are not in needs root */
	if (geteuid() != 0)
		fail_msg("needs root (CI runs as root): euid %ld", (long)geteuid());
	for (size_t g = 0; g < 2; g++)
		for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
			char name[64];
			struct stat sb;
			flash_t *h = NULL;

			t_segname(name, sizeof name);
			create_under(name, masks[i], 0660, gids[g]);
			shm_stat(name, &sb);
			assert_int_equal(sb.st_mode & 07777, 0660);
			assert_int_equal(sb.st_uid, geteuid());
			assert_int_equal(sb.st_gid, gids[g]);
			assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
			assert_int_equal(flash_close(h), FLASH_OK);
		}
}

static void test_mode_0660_without_a_group_keeps_the_creators_group(void **state)
{
	char name[64];
	struct stat sb;

	t_segname(name, sizeof name);
	create_under(name, 0, 0660, -1);
	shm_stat(name, &sb);
	assert_int_equal(sb.st_mode & 07777, 0660);
	assert_int_equal(sb.st_gid, getegid());
}

static void test_world_writable_or_widened_modes_are_refused_emode(void **state)
{
	const mode_t bad[] = { 0622, 0602, 0666, 0606, 0662, 0620, 0670, 0760, 0664, 01600, 02660 };
	const uint32_t created[] = { 0600, 0660 };

	for (size_t c = 0; c < 2; c++) {
		char name[64], path[128];
		flash_t *h = NULL;

		t_segname(name, sizeof name);
		t_shm_path(name, path, sizeof path);
		create_under(name, 022, created[c], -1);
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			assert_int_equal(chmod(path, bad[i]), 0);
			assert_int_equal(flash_open(name, 0, &h), FLASH_EMODE);
			assert_int_equal(flash_open(name, FLASH_RDONLY, &h), FLASH_EMODE);
		}
		/* the mode it was made with is accepted again */
		assert_int_equal(chmod(path, created[c]), 0);
		assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
		assert_int_equal(flash_close(h), FLASH_OK);
	}
}

static void test_foreign_owner_set_by_fchown_is_refused_eowner(void **state)
{
	const uint32_t created[] = { 0600, 0660 };

	/* changing an owner needs root */
	if (geteuid() != 0)
		fail_msg("needs root (CI runs as root): euid %ld", (long)geteuid());
	for (size_t c = 0; c < 2; c++) {
		char name[64];
		flash_t *h = NULL;
		int fd;

		t_segname(name, sizeof name);
		create_under(name, 0, created[c], -1);
		fd = shm_open(name, O_RDWR, 0);
		assert_true(fd >= 0);
		/* a group we are not in: a 0660 segment is shared with its group */
		assert_int_equal(fchown(fd, 65534, 65534), 0);
		assert_int_equal(flash_open(name, 0, &h), FLASH_EOWNER);
		assert_int_equal(flash_open(name, FLASH_RDONLY, &h), FLASH_EOWNER);
		/* foreign and world-writable: the owner is named first */
		assert_int_equal(fchmod(fd, 0666), 0);
		assert_int_equal(flash_open(name, 0, &h), FLASH_EOWNER);
		/* a collision with it still fails, and does not take it over */
		assert_int_equal(flash_seg_create(name, NULL), FLASH_EEXIST);
		{
			struct stat sb;

			assert_int_equal(fstat(fd, &sb), 0);
			assert_int_equal(sb.st_uid, 65534);
			assert_int_equal(sb.st_mode & 07777, 0666);
		}
		assert_int_equal(fchown(fd, geteuid(), (gid_t)-1), 0);
		assert_int_equal(fchmod(fd, created[c]), 0);
		close(fd);
		assert_int_equal(flash_open(name, 0, &h), FLASH_OK);
		assert_int_equal(flash_close(h), FLASH_OK);
	}
}

static void test_collision_with_a_foreign_object_fails_eexist_and_leaves_it_alone(void **state)
{
	const mode_t modes[] = { 0600, 0644, 0666 };

	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		char name[64], buf[64];
		const char msg[] = "not a flashstock segment";
		struct stat before, after;
		mode_t old = umask(0);
		int fd;

		t_segname(name, sizeof name);
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, modes[m]);
		umask(old);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, msg, sizeof msg, 0), (ssize_t)sizeof msg);
		assert_int_equal(fstat(fd, &before), 0);

		assert_int_equal(flash_seg_create(name, NULL), FLASH_EEXIST);

		assert_int_equal(fstat(fd, &after), 0);
		assert_int_equal(after.st_size, before.st_size);
		assert_int_equal(after.st_mode, before.st_mode);
		assert_int_equal(after.st_uid, before.st_uid);
		assert_int_equal(after.st_ino, before.st_ino);
		memset(buf, 0, sizeof buf);
		assert_int_equal(pread(fd, buf, sizeof msg, 0), (ssize_t)sizeof msg);
		assert_string_equal(buf, msg);
		close(fd);
		/* and attaching to it is refused, not "repaired" */
		{
			flash_t *h = NULL;
			int rc = flash_open(name, 0, &h);

			assert_true(rc == FLASH_EMODE || rc == FLASH_ESIZE || rc == FLASH_EMAGIC);
			assert_null(h);
		}
	}
}

static void test_collision_with_a_live_segment_keeps_its_state(void **state)
{
	char name[64];
	flash_t *h = t_seg_new(NULL, name, sizeof name);
	struct flash_sku_info si;

	assert_int_equal(t_activity(h, 1, 1, 4, FLASH_SCOPE_ACTIVITY, 0), FLASH_OK);
	assert_int_equal(flash_sku_add(h, 1, 10, 50, 2), FLASH_OK);
	assert_int_equal(t_order(h, 1, 10, 7, 3, 0, 0, NULL), FLASH_OK);
	for (int i = 0; i < 3; i++)
		assert_int_equal(flash_seg_create(name, NULL), FLASH_EEXIST);
	assert_int_equal(flash_sku_get(h, 1, 10, &si), FLASH_OK);
	assert_int_equal(si.total, 50);
	assert_int_equal(si.available, 47);
	assert_int_equal(flash_orders_max(h), 1);
}

/* ---- as unprivileged users ------------------------------------------------
 * Each child returns 0 when every step gave what it should, else the number
 * of the first step that did not (the parent's assert names it). */

struct perm_case {
	const char *name;
	uint32_t mode;          /* for the creating child */
	int64_t gid;            /* -1: the creator's group */
	mode_t chmod_to;        /* 0: leave the mode */
};

/* create @p name with mode/gid, then (if asked) chmod it; as the caller */
static int child_create(void *arg)
{
	const struct perm_case *pc = arg;
	struct flash_seg_opts o;
	char path[128];
	struct stat sb;

	t_opts_small(&o);
	o.mode = pc->mode;
	o.gid = pc->gid;
	umask(022);
	if (flash_seg_create(pc->name, &o) != FLASH_OK)
		return 1;
	t_shm_path(pc->name, path, sizeof path);
	if (stat(path, &sb) != 0 || sb.st_uid != geteuid() || (sb.st_mode & 07777) != pc->mode)
		return 2;
	if (pc->gid >= 0 && sb.st_gid != (gid_t)pc->gid)
		return 3;
	if (pc->chmod_to != 0 && chmod(path, pc->chmod_to) != 0)
		return 4;
	return 0;
}

/* the owner: attaches writable and read-only, orders, closes */
static int child_owner_attaches(void *arg)
{
	const struct perm_case *pc = arg;
	flash_t *h = NULL, *r = NULL;

	if (flash_open(pc->name, 0, &h) != FLASH_OK)
		return 1;
	if (flash_open(pc->name, FLASH_RDONLY, &r) != FLASH_OK)
		return 2;
	if (t_activity(h, 1, 1, 4, FLASH_SCOPE_ACTIVITY, 0) != FLASH_OK ||
	    flash_sku_add(h, 1, 10, 5, 1) != FLASH_OK ||
	    t_order(h, 1, 10, 7, 1, 0, 0, NULL) != FLASH_OK)
		return 3;
	if (flash_close(r) != FLASH_OK || flash_close(h) != FLASH_OK)
		return 4;
	return 0;
}

/* the OS refuses: open (both ways) and destroy give FLASH_EPERM */
static int child_refused_eperm(void *arg)
{
	const struct perm_case *pc = arg;
	flash_t *h = NULL;

	if (flash_open(pc->name, 0, &h) != FLASH_EPERM)
		return 1;
	if (flash_open(pc->name, FLASH_RDONLY, &h) != FLASH_EPERM)
		return 2;
	if (flash_seg_destroy(pc->name) != FLASH_EPERM)   /* /dev/shm is sticky */
		return 3;
	return h == NULL ? 0 : 4;
}

/* the OS lets us open it, flashstock refuses: a foreign owner, FLASH_EOWNER */
static int child_refused_eowner(void *arg)
{
	const struct perm_case *pc = arg;
	flash_t *h = NULL;

	if (flash_open(pc->name, 0, &h) != FLASH_EOWNER)
		return 1;
	if (flash_open(pc->name, FLASH_RDONLY, &h) != FLASH_EOWNER)
		return 2;
	return h == NULL ? 0 : 3;
}

/* readable by us only: the OS refuses a writable open, flashstock the rest */
static int child_refused_eowner_rdonly(void *arg)
{
	const struct perm_case *pc = arg;
	flash_t *h = NULL;

	if (flash_open(pc->name, 0, &h) != FLASH_EPERM)
		return 1;
	if (flash_open(pc->name, FLASH_RDONLY, &h) != FLASH_EOWNER)
		return 2;
	return h == NULL ? 0 : 3;
}

/* a member of the segment's group: attaches both ways and orders */
static int child_member_attaches(void *arg)
{
	const struct perm_case *pc = arg;
	flash_t *h = NULL, *r = NULL;
	int rc;

	if ((rc = flash_open(pc->name, 0, &h)) != FLASH_OK) {
		fprintf(stderr, "group member: flash_open(%s): %s\n", pc->name, flash_rcname(rc));
		return 1;
	}
	if (flash_open(pc->name, FLASH_RDONLY, &r) != FLASH_OK)
		return 2;
	if (t_order(h, 1, 10, 8, 1, 0, 0, NULL) != FLASH_OK)
		return 3;
	if (flash_close(r) != FLASH_OK || flash_close(h) != FLASH_OK)
		return 4;
	return 0;
}

static void test_unprivileged_owner_attaches_its_own_segment_both_modes(void **state)
{
	char name[64];
	struct perm_case pc = { name, 0600, -1, 0 };

	t_segname(name, sizeof name);
	assert_int_equal(t_run_as(T_USER_A, child_create, &pc), 0);
	assert_int_equal(t_run_as(T_USER_A, child_owner_attaches, &pc), 0);
	t_segname(name, sizeof name);
	pc.mode = 0660;
	pc.gid = (int64_t)t_test_gid();   /* A is a member: no privilege needed */
	assert_int_equal(t_run_as(T_USER_A, child_create, &pc), 0);
	assert_int_equal(t_run_as(T_USER_A, child_owner_attaches, &pc), 0);
}

static void test_other_unprivileged_user_is_refused_eperm_and_the_segment_stays(void **state)
{
	char name[64];
	struct perm_case pc = { name, 0600, -1, 0 };

	t_segname(name, sizeof name);
	assert_int_equal(t_run_as(T_USER_A, child_create, &pc), 0);
	/* B shares a group with A, but the segment is 0600 */
	assert_int_equal(t_run_as(T_USER_B, child_refused_eperm, &pc), 0);
	assert_int_equal(t_run_as(T_USER_C, child_refused_eperm, &pc), 0);
	assert_int_equal(t_run_as(T_USER_A, child_owner_attaches, &pc), 0);
}

static void test_non_member_is_refused_eperm_on_a_0660_group_segment(void **state)
{
	char name[64];
	struct perm_case pc = { name, 0660, -1, 0 };

	pc.gid = (int64_t)t_test_gid();
	t_segname(name, sizeof name);
	assert_int_equal(t_run_as(T_USER_A, child_create, &pc), 0);
	assert_int_equal(t_run_as(T_USER_C, child_refused_eperm, &pc), 0);
	assert_int_equal(t_run_as(T_USER_A, child_owner_attaches, &pc), 0);
}

static void test_foreign_owner_is_refused_eowner_when_the_os_would_allow(void **state)
{
	/* A makes its segment world-accessible: the OS lets B and C open it,
	 * flashstock names the foreign owner (before the wrong mode) */
	const mode_t opened[] = { 0666, 0606, 0644 };

	for (size_t i = 0; i < sizeof opened / sizeof opened[0]; i++) {
		char name[64];
		struct perm_case pc = { name, 0600, -1, opened[i] };

		t_segname(name, sizeof name);
		assert_int_equal(t_run_as(T_USER_A, child_create, &pc), 0);
		if (opened[i] & 0002) {
			assert_int_equal(t_run_as(T_USER_B, child_refused_eowner, &pc), 0);
			assert_int_equal(t_run_as(T_USER_C, child_refused_eowner, &pc), 0);
		} else {
			/* 0644: read-only for others; a writable open is the OS's refusal */
			assert_int_equal(t_run_as(T_USER_B, child_refused_eowner_rdonly, &pc), 0);
			assert_int_equal(t_run_as(T_USER_C, child_refused_eowner_rdonly, &pc), 0);
		}
	}
}

/*
 * The design (§3): a segment created 0660 with a named group is shared by
 * that group.  B, a member, must attach it and order.  Today flash_open
 * requires the owner to be the caller and B gets FLASH_EOWNER.
 */
static void test_group_member_attaches_a_0660_group_segment(void **state)
{
	char name[64];
	struct perm_case pc = { name, 0660, -1, 0 };

	pc.gid = (int64_t)t_test_gid();
	t_segname(name, sizeof name);
	assert_int_equal(t_run_as(T_USER_A, child_create, &pc), 0);
	assert_int_equal(t_run_as(T_USER_A, child_owner_attaches, &pc), 0);
	assert_int_equal(t_run_as(T_USER_B, child_member_attaches, &pc), 0);
}

#define T(fn) cmocka_unit_test_teardown(fn, t_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_mode_0600_is_exact_under_every_umask_and_owner_is_euid),
		T(test_mode_0660_with_a_group_is_exact_and_has_that_group),
		T(test_mode_0660_without_a_group_keeps_the_creators_group),
		T(test_world_writable_or_widened_modes_are_refused_emode),
		T(test_foreign_owner_set_by_fchown_is_refused_eowner),
		T(test_collision_with_a_foreign_object_fails_eexist_and_leaves_it_alone),
		T(test_collision_with_a_live_segment_keeps_its_state),
		T(test_unprivileged_owner_attaches_its_own_segment_both_modes),
		T(test_other_unprivileged_user_is_refused_eperm_and_the_segment_stays),
		T(test_non_member_is_refused_eperm_on_a_0660_group_segment),
		T(test_foreign_owner_is_refused_eowner_when_the_os_would_allow),
		T(test_group_member_attaches_a_0660_group_segment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
